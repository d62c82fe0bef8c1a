/**
 * The console's API types cannot drift from the server: the committed `renderer/src/api/openapi.gen.ts` must be
 * exactly what the current route schemas generate (`npm run gen:api-types` rewrites it).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { API_TYPES_FILE, generateApiTypes } from '../../scripts/api-types.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe("the console's generated API types", () => {
  it('match the OpenAPI document the routes produce now', async () => {
    const committed = fs.readFileSync(path.join(root, API_TYPES_FILE), 'utf8');
    const current = await generateApiTypes();
    expect(current.length).toBeGreaterThan(10_000);
    expect(current).toContain('"/connections/{id}/chats/{chatId}/messages"');
    expect(committed === current, `${API_TYPES_FILE} is stale: run npm run gen:api-types`).toBe(true);
  });
});
