/**
 * The layering of DESIGN.md §2 is enforced by lint (eslint.config.js): fixture sources linted as if they lived in a
 * given folder — a forbidden import fails with the layering message, an allowed one passes — and the allowed
 * graph (LAYERS) covers every service/ folder and has no cycles.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
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
