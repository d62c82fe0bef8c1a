/**
 * Writes the settings reference of docs/settings.md from the settings table (service/config/settings-table.ts):
 * the text between the `settings-reference` markers is replaced, the prose around it is kept
 * (`npm run gen:settings-docs`). test/unit/settings.test.ts fails when the committed file differs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { withReference } from '../service/config/settings-docs.ts';

const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../docs/settings.md');
fs.writeFileSync(file, withReference(fs.readFileSync(file, 'utf8')));
console.log('wrote docs/settings.md');
