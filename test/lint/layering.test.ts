/**
 * The layering of docs/architecture.md ("Layering: who may import whom") is enforced by lint (eslint.config.js):
 * fixture sources linted as if they lived in a given folder or file — a forbidden import fails with the layering
 * message, an allowed one passes — and the allowed graph (LAYERS) covers every service/ folder and has no cycles.
 * What Electron's main process loads is checked on the whole import graph from main/index.ts too: main/ and the
 * bottom layers of the service, none of the service's packages (issue 25 items 1 and 9).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint({ cwd: path.resolve('.') });

/** The messages of the layering rule for `code` placed at `file`. */
async function violations(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.resolve(file) });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('the layering lint rule', () => {
  it.each([
    ['service/db/fixture.ts', "import { buildApp } from '../http/app.ts';\nexport const x = buildApp;\n", 'service/db/ must not import'],
    ['service/engine/fixture.ts', "import { webhookRoutes } from '../http/routes/webhooks.ts';\nexport const x = webhookRoutes;\n", 'service/engine/ must not import'],
    ['service/sandbox/fixture.ts', "import { createEngine } from '../engine/engine.ts';\nexport const x = createEngine;\n", 'service/sandbox/ must not import'],
    ['service/http/routes/fixture.ts', "import { serveCommand } from '../../cli/serve.ts';\nexport const x = serveCommand;\n", 'service/http/ must not import'],
    ['renderer/src/views/fixture.ts', "import { openStore } from '../../../service/db/store.ts';\nexport const x = openStore;\n", 'The console talks to the service over HTTP only'],
    ['service/config/fixture.ts', "import { app } from 'electron';\nexport const x = app;\n", 'Only main/ and preload/ may import electron.'],
    // The cycles of before: the store publishing events, the event log above the outbox, config reaching into billing.
    ['service/db/fixture.ts', "import { EventLog } from '../events/log.ts';\nexport const x = EventLog;\n", 'service/db/ must not import'],
    ['service/events/fixture.ts', "import { WebhookOutbox } from '../webhooks/outbox.ts';\nexport const x = WebhookOutbox;\n", 'service/events/ must not import'],
    ['service/config/fixture.ts', "import { createBilling } from '../billing/billing.ts';\nexport const x = createBilling;\n", 'service/config/ must not import'],
    // The programs at service/'s root: the service (index.ts) and a session thread's (session-worker.ts).
    ['service/index.ts', "import { serveCommand } from './cli/serve.ts';\nexport const x = serveCommand;\n", 'service/index.ts must not import service/cli/'],
    ['service/session-worker.ts', "import { buildApp } from './http/app.ts';\nexport const x = buildApp;\n", 'service/session-worker.ts must not import'],
    ['service/session-worker.ts', "import { startService } from './index.ts';\nexport const x = startService;\n", 'service/session-worker.ts must not import service/index.ts'],
    ['service/index.ts', "import { ensureOperatorToken } from '../main/operator-token.ts';\nexport const x = ensureOperatorToken;\n", 'or anything outside service/'],
    ['service/engine/fixture.ts', "import { startService } from '../index.ts';\nexport const x = startService;\n", 'programs, not layers'],
    // The data plane (docs/architecture.md § Data plane) assembles webhooks/: a layer below must not reach it so.
    ['service/engine/fixture.ts', "import { openDataPlane } from '../data-plane.ts';\nexport const x = openDataPlane;\n", 'must not import service/data-plane.ts'],
    ['service/data-plane.ts', "import { buildApp } from './http/app.ts';\nexport const x = buildApp;\n", 'service/data-plane.ts imports only'],
    ['service/data-plane.ts', "import { startService } from './index.ts';\nexport const x = startService;\n", 'must not import the programs'],
    // Electron's main process: the service runs in its own process (the import that loaded it all into main).
    ['main/service-supervisor.ts', "import { PINNED_PORT_VARIABLE } from './service-host.ts';\nexport const x = PINNED_PORT_VARIABLE;\n", 'main/service-host.ts is the service process\'s entry'],
    ['main/fixture.ts', "import { startService } from '../service/index.ts';\nexport const x = startService;\n", "main/ is Electron's main process: from service/ it may import only"],
    ['main/fixture.ts', "import { openStore } from '../service/db/store.ts';\nexport const x = openStore;\n", "main/ is Electron's main process: from service/ it may import only"],
    ['main/fixture.ts', "import Database from 'better-sqlite3';\nexport const x = Database;\n", 'better-sqlite3 belongs to the service'],
    ['main/fixture.ts', "import { makeWASocket } from '@whiskeysockets/baileys';\nexport const x = makeWASocket;\n", 'belongs to the service'],
    ['main/fixture.ts', "import websocket from '@fastify/websocket';\nexport const x = websocket;\n", 'Fastify belongs to the service'],
    ['main/service-host.ts', "import { app } from 'electron';\nexport const x = app;\n", 'no electron'],
    ['main/service-host.ts', "import { ServiceSupervisor } from './service-supervisor.ts';\nexport const x = ServiceSupervisor;\n", 'only ./host-protocol.ts'],
    ['bin/fixture.js', "import { app } from 'electron';\nexport const x = app;\n", 'Only main/ and preload/ may import electron.'],
    ['scripts/fixture.ts', "import { app } from 'electron';\nexport const x = app;\n", 'Only main/ and preload/ may import electron.'],
  ])('refuses a forbidden import in %s', async (file, code, message) => {
    const found = await violations(file, code);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(message);
  });

  it.each([
    ['service/http/routes/fixture.ts', "import { openStore } from '../../db/store.ts';\nexport const x = openStore;\n"],
    ['service/engine/fixture.ts', "import { isStorageError } from '../db/store.ts';\nexport const x = isStorageError;\n"],
    ['service/sandbox/fixture.ts', "import { parseHost } from '../net/host.ts';\nexport const x = parseHost;\n"],
    ['service/webhooks/fixture.ts', "import { EventLog } from '../events/log.ts';\nexport const x = EventLog;\n"],
    ['service/session-worker.ts', "import { createEngine } from './engine/engine.ts';\nexport const x = createEngine;\n"],
    ['service/cli/fixture.ts', "import { startService } from '../index.ts';\nexport const x = startService;\n"],
    ['service/cli/fixture.ts', "import { openDataPlane } from '../data-plane.ts';\nexport const x = openDataPlane;\n"],
    ['service/session-worker.ts', "import { openDataPlane } from './data-plane.ts';\nexport const x = openDataPlane;\n"],
    ['main/fixture.ts', "import { resolveDataDir } from '../service/config/service-config.ts';\nexport const x = resolveDataDir;\n"],
    ['main/fixture.ts', "import { PINNED_PORT_VARIABLE } from './host-protocol.ts';\nimport { app } from 'electron';\nexport const x = [PINNED_PORT_VARIABLE, app];\n"],
    ['main/service-host.ts', "import { startService } from '../service/index.ts';\nimport { PINNED_PORT_VARIABLE } from './host-protocol.ts';\nexport const x = [startService, PINNED_PORT_VARIABLE];\n"],
  ])('allows a downward import in %s', async (file, code) => {
    expect(await violations(file, code)).toEqual([]);
  });

  it('allows no cycle between the service/ folders: every folder, new ones too, is in the layering', async () => {
    const folders = fs
      .readdirSync('service', { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    // What the effective config lets each folder import: all folders but the forbidden ones (none without a rule).
    const allowed = new Map<string, string[]>();
    for (const folder of folders) {
      const config = (await eslint.calculateConfigForFile(path.resolve(`service/${folder}/fixture.ts`))) as {
        rules: Record<string, [unknown, { patterns?: Array<{ regex?: string }> }?]>;
      };
      const regex = config.rules['no-restricted-imports']?.[1]?.patterns?.[0]?.regex ?? '';
      const forbidden = /\+\(([^)]*)\)\/$/.exec(regex)?.[1]?.split('|') ?? [];
      allowed.set(folder, folders.filter((f) => f !== folder && !forbidden.includes(f)));
    }
    const cycle = findCycle(allowed);
    expect(cycle, `allowed import cycle: ${cycle?.join(' -> ')}`).toBeUndefined();
  });
});

describe("what Electron's main process loads", () => {
  it('is main/ and the bottom of the service (config/, secrets/), none of the packages that are the service', async () => {
    const config = path.resolve('eslint.config.js'); // a variable: plain JavaScript, no types to check
    const { MAIN } = (await import(config)) as { MAIN: { service: string[]; packages: string[] } };
    const { files, packages } = importGraph('main/index.ts');
    expect(files).toContain('main/service-supervisor.ts'); // the walk follows main's imports
    expect(files).not.toContain('main/service-host.ts');
    const service = files.filter((f) => f.startsWith('service/'));
    expect(service.length).toBeGreaterThan(0);
    expect(service.filter((f) => !MAIN.service.some((layer) => f.startsWith(`service/${layer}/`)))).toEqual([]);
    expect(packages.filter((p) => MAIN.packages.includes(p) || p.startsWith('@fastify/'))).toEqual([]);
  });
});

/**
 * The files (relative to the checkout) and packages `entry` loads when it runs: static and dynamic imports and
 * re-exports, followed through relative paths; type-only imports load nothing and are skipped.
 */
function importGraph(entry: string): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    if (!/\.[cm]?ts$/.test(file)) return; // package.json and the like
    const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const specifiers: string[] = [];
    const walk = (node: ts.Node) => {
      const text = (n: ts.Expression) => (n as ts.StringLiteral).text;
      if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly) specifiers.push(text(node.moduleSpecifier));
      else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly) specifiers.push(text(node.moduleSpecifier));
      else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && ts.isStringLiteral(node.arguments[0]!))
        specifiers.push(text(node.arguments[0]));
      ts.forEachChild(node, walk);
    };
    walk(source);
    for (const spec of specifiers) {
      if (spec.startsWith('.')) visit(path.relative('.', path.resolve(path.dirname(file), spec)));
      else if (!spec.startsWith('node:')) packages.add(spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/'));
    }
  };
  visit(entry);
  return { files: [...files], packages: [...packages] };
}

/** A cycle of `graph` as its path (first node repeated at the end), or undefined when it has none. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    const at = path.indexOf(node);
    if (at >= 0) return [...path.slice(at), node];
    if (done.has(node)) return undefined;
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const found = visit(next);
      if (found) return found;
    }
    path.pop();
    done.add(node);
    return undefined;
  };
  for (const node of graph.keys()) {
    const found = visit(node);
    if (found) return found;
  }
  return undefined;
}
