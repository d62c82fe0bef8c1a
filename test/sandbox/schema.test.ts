/**
 * The sandbox database migrates in place: a file written by the v2 schema (before groups) opens with the current
 * build, keeps its messages and outbox rows, and gains the group tables and columns.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { MIGRATIONS } from '../../service/sandbox/schema.ts';
import { Store } from '../../service/sandbox/store.ts';

describe('sandbox schema migrations', () => {
  const root = mkdtempSync(join(tmpdir(), 'sandbox-schema-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('upgrades a v2 database without losing its rows', () => {
    const db = new Database(join(root, 'sandbox.db'));
    for (const [i, sql] of MIGRATIONS.slice(0, 2).entries()) {
      db.exec(sql);
      db.pragma(`user_version = ${i + 1}`);
    }
    db.prepare('INSERT INTO messages (msg_id, from_pn, to_pn, ts, text, message) VALUES (?, ?, ?, ?, ?, ?)').run(
      'OLD1',
      '15550101',
      '15550100',
      1_700_000_000,
      'from before groups',
      Buffer.from([0x0a, 0x01, 0x78]),
    );
    db.close();

    const store = new Store(root);
    try {
      expect(store.db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
      const [old] = store.listReceived('15550100');
      expect(old).toMatchObject({ msgId: 'OLD1', text: 'from before groups', groupId: null });
      store.insertGroup(
        {
          id: '120363000000000042',
          subject: 'After the upgrade',
          subjectOwner: '15550100',
          subjectTs: 1,
          description: null,
          descriptionId: null,
          descriptionOwner: null,
          descriptionTs: null,
          creator: '15550100',
          createdAt: 1,
          addressingMode: 'lid',
          inviteCode: 'code',
        },
        [{ pn: '15550100', role: 'superadmin' }],
      );
      expect(store.getGroup('120363000000000042')).toMatchObject({
        addressingMode: 'lid',
        announce: false,
        locked: false,
        ephemeral: 0,
      });
      expect(store.listGroupsOf('15550100').map((g) => g.subject)).toEqual(['After the upgrade']);
    } finally {
      store.close();
    }
  });

  it('refuses a database from a newer build', () => {
    const dir = join(root, 'newer');
    const first = new Store(dir);
    first.db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    first.close();
    expect(() => new Store(dir)).toThrow(/newer than this build/);
  });
});
