/**
 * The layering of DESIGN.md §2 is enforced by lint (eslint.config.js): fixture sources linted as if they lived in a
 * given folder — a forbidden import fails with the layering message, an allowed one passes.
 */
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
  ])('refuses a forbidden import in %s', async (file, code, message) => {
    const found = await violations(file, code);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(message);
  });

  it.each([
    ['service/http/routes/fixture.ts', "import { openStore } from '../../db/store.ts';\nexport const x = openStore;\n"],
    ['service/engine/fixture.ts', "import { isStorageError } from '../db/store.ts';\nexport const x = isStorageError;\n"],
    ['service/sandbox/fixture.ts', "import { parseHost } from '../net/host.ts';\nexport const x = parseHost;\n"],
  ])('allows a downward import in %s', async (file, code) => {
    expect(await violations(file, code)).toEqual([]);
  });
});
