/**
 * Fault: the database file at start is not ours (corrupt, or another application's SQLite file).
 * `switchboard serve` must refuse with one clear line and a non-zero exit, leaving the file byte-for-byte intact.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/service-process.ts';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-fault-db-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const sha = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

describe('serve with a database that is not Switchboard’s', () => {
  it('refuses a corrupt file and leaves it untouched', async () => {
    const file = path.join(dir, 'switchboard.db');
    fs.writeFileSync(file, Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(4096, 0xff)]));
    const before = sha(file);
    const res = await runCli(['serve', '--port', '0', '--data-dir', dir]);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/switchboard\.db/);
    expect(sha(file)).toBe(before);
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
  });

  it("refuses another application's database and leaves it untouched", async () => {
    const file = path.join(dir, 'switchboard.db');
    const other = new Database(file);
    other.exec(`CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices (total) VALUES (42.5);`);
    other.close();
    const before = sha(file);
    const res = await runCli(['serve', '--port', '0', '--data-dir', dir]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/another application/);
    expect(sha(file)).toBe(before);
    const reopened = new Database(file, { readonly: true });
    expect(reopened.prepare('SELECT total FROM invoices').get()).toEqual({ total: 42.5 });
    reopened.close();
  });
});
