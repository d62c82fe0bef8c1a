/**
 * The service's group metadata cache (what Baileys reads as `cachedGroupMetadata`) and the group records built from
 * it: member changes from `w:gp2` notifications in PN and LID form, subject/description deltas, participant parsing
 * (numbers, JIDs, LIDs in LID-addressed groups) and the mapping of WhatsApp's IQ error codes to API errors; the
 * cache kept in a real SQLite file across a reopen (what a restart finds).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Boom } from '@hapi/boom';
import type { GroupMetadata } from '@whiskeysockets/baileys';
import { describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../service/db/store.ts';
import {
  GROUP_REFRESH_MAX_AGE_MS,
  GroupCache,
  groupError,
  groupInfoOf,
  groupJidOf,
  isMember,
  participantJidOf,
  storedGroups,
} from '../../service/engine/groups.ts';
import type { ModelContext } from '../../service/engine/message-model.ts';
import { mediaUrl } from '../../service/db/media-url.ts';

const OWN = '15550100@s.whatsapp.net';
const OWN_LID = '209999999999999@lid';
const ALICE = '15550101@s.whatsapp.net';
const ALICE_LID = '201111111111111@lid';
const BOB = '15550102@s.whatsapp.net';
const GROUP = '120363000000000042@g.us';

const ctx: ModelContext = {
  mediaUrl: (file) => mediaUrl('http://127.0.0.1:7575/api', 'c1', file),
  ownJid: OWN,
  ownLid: OWN_LID,
  pnForLid: (lid) => (lid === ALICE_LID ? ALICE : undefined),
};

const pnGroup = (): GroupMetadata => ({
  id: GROUP,
  subject: 'Team',
  desc: 'About',
  owner: OWN,
  creation: 1_700_000_000,
  addressingMode: 'pn' as GroupMetadata['addressingMode'],
  participants: [
    { id: OWN, admin: 'superadmin' },
    { id: ALICE, admin: null },
  ],
});

const lidGroup = (): GroupMetadata => ({
  ...pnGroup(),
  addressingMode: 'lid' as GroupMetadata['addressingMode'],
  owner: ALICE_LID,
  ownerPn: ALICE,
  participants: [
    { id: ALICE_LID, phoneNumber: ALICE, admin: 'superadmin' },
    { id: OWN_LID, phoneNumber: OWN, admin: null },
  ],
});

describe('group cache', () => {
  it('adds, promotes, demotes and removes members named by JID, phone number or LID', () => {
    const cache = new GroupCache();
    cache.set(pnGroup());
    expect(cache.applyParticipants(GROUP, 'add', [{ id: BOB }])).toBe(true);
    expect(cache.get(GROUP)!.participants.map((p) => p.id)).toEqual([OWN, ALICE, BOB]);
    expect(cache.get(GROUP)!.size).toBe(3);
    cache.applyParticipants(GROUP, 'add', [{ id: BOB }]); // a repeated notification changes nothing
    expect(cache.get(GROUP)!.participants).toHaveLength(3);
    cache.applyParticipants(GROUP, 'promote', [{ id: BOB }]);
    expect(cache.get(GROUP)!.participants.find((p) => p.id === BOB)!.admin).toBe('admin');
    cache.applyParticipants(GROUP, 'promote', [{ id: OWN }]); // the superadmin stays superadmin
    expect(cache.get(GROUP)!.participants.find((p) => p.id === OWN)!.admin).toBe('superadmin');
    cache.applyParticipants(GROUP, 'demote', [{ id: BOB }]);
    expect(cache.get(GROUP)!.participants.find((p) => p.id === BOB)!.admin).toBeNull();
    // a LID-form notification (LID with the phone number alongside) matches the PN-named member
    cache.applyParticipants(GROUP, 'remove', [{ id: ALICE_LID, phoneNumber: ALICE }]);
    expect(cache.get(GROUP)!.participants.map((p) => p.id)).toEqual([OWN, BOB]);
    expect(cache.applyParticipants('120363000000000099@g.us', 'add', [{ id: BOB }])).toBe(false);
  });

  it('merges subject and description deltas; a removed description is undefined', () => {
    const cache = new GroupCache();
    cache.set(pnGroup());
    cache.update({ id: GROUP, subject: 'Renamed' });
    expect(cache.get(GROUP)).toMatchObject({ subject: 'Renamed', desc: 'About' });
    cache.update({ id: GROUP, desc: undefined });
    expect(cache.get(GROUP)!.desc).toBeUndefined();
    expect(cache.get(GROUP)!.participants).toHaveLength(2);
  });
});

describe('group cache in the store', () => {
  const CONNECTION = '11111111-2222-4333-8444-555555555555';
  const OTHER = '99999999-2222-4333-8444-555555555555';
  const withStore = (fn: (reopen: () => Store) => void) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-groups-'));
    const open: Store[] = [];
    const reopen = () => {
      for (const s of open.splice(0)) s.close();
      const store = openStore(dir);
      open.push(store);
      return store;
    };
    try {
      const store = reopen();
      const userId = store.users.create('alice').id;
      for (const id of [CONNECTION, OTHER]) store.connections.insert({ id, userId, name: null, workerId: 'local' });
      fn(reopen);
    } finally {
      for (const s of open) s.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };

  it('keeps whole metadata and every notification delta across a reopen, per connection', () => {
    withStore((reopen) => {
      let store = reopen();
      const cache = new GroupCache(storedGroups(store, CONNECTION));
      expect(cache.needsRefresh()).toBe(true); // nothing cached yet: a connect asks for every group
      cache.set(pnGroup());
      cache.set({ ...lidGroup(), id: '120363000000000043@g.us' });
      cache.applyParticipants(GROUP, 'add', [{ id: BOB }]);
      cache.applyParticipants(GROUP, 'promote', [{ id: ALICE }]);
      cache.update({ id: GROUP, subject: 'Renamed', desc: 'New rules' });
      cache.delete('120363000000000043@g.us');
      expect(cache.needsRefresh()).toBe(false);
      new GroupCache(storedGroups(store, OTHER)).set({ ...pnGroup(), subject: 'Other account' });

      store = reopen(); // a restart
      const again = new GroupCache(storedGroups(store, CONNECTION));
      expect(again.all().map((g) => g.id)).toEqual([GROUP]);
      expect(again.get(GROUP)).toMatchObject({ subject: 'Renamed', desc: 'New rules', size: 3 });
      expect(again.get(GROUP)!.participants).toEqual([
        { id: OWN, admin: 'superadmin' },
        { id: ALICE, admin: 'admin' },
        { id: BOB, admin: null },
      ]);
      expect(again.needsRefresh()).toBe(false);
      expect(again.needsRefresh(Date.now() + GROUP_REFRESH_MAX_AGE_MS + 1000)).toBe(true); // old: asked again
      expect(new GroupCache(storedGroups(store, OTHER)).get(GROUP)!.subject).toBe('Other account');

      // the server's list of groups drops the ones the account left; a logout forgets them all
      again.set({ ...pnGroup(), id: '120363000000000044@g.us' });
      again.retainOnly(['120363000000000044@g.us']);
      store = reopen();
      const third = new GroupCache(storedGroups(store, CONNECTION));
      expect(third.all().map((g) => g.id)).toEqual(['120363000000000044@g.us']);
      third.clear();
      store = reopen();
      expect(new GroupCache(storedGroups(store, CONNECTION)).all()).toEqual([]);
      expect(new GroupCache(storedGroups(store, OTHER)).all()).toHaveLength(1);
    });
  });

  it('a group known from deltas only is old; a damaged row is skipped; a deleted connection loses its groups', () => {
    withStore((reopen) => {
      let store = reopen();
      store.groupMetadata.put(CONNECTION, GROUP, JSON.stringify(pnGroup()), null);
      store.groupMetadata.put(CONNECTION, '120363000000000045@g.us', '{not json', Date.now());
      const cache = new GroupCache(storedGroups(store, CONNECTION));
      expect(cache.all().map((g) => g.id)).toEqual([GROUP]);
      expect(cache.needsRefresh()).toBe(true); // fetched_at 0: never sent whole by the server
      store.connections.setStatus(CONNECTION, 'stopped', 'deleted');
      store = reopen();
      expect(store.groupMetadata.list(CONNECTION)).toEqual([]);
    });
  });
});

describe('group records', () => {
  it('maps a LID-addressed group to phone-number JIDs with LIDs alongside, own LID included', () => {
    const info = groupInfoOf(lidGroup(), ctx, (jid) => (jid === ALICE ? 'Alice' : undefined));
    expect(info).toMatchObject({ id: GROUP, subject: 'Team', description: 'About', owner: ALICE, addressingMode: 'lid', participantsCount: 2, createdAt: '2023-11-14T22:13:20.000Z' });
    expect(info.participants).toEqual([
      { jid: ALICE, phoneNumber: '+15550101', lid: ALICE_LID, name: 'Alice', isAdmin: true, isSuperAdmin: true },
      { jid: OWN, phoneNumber: '+15550100', lid: OWN_LID, name: null, isAdmin: false, isSuperAdmin: false },
    ]);
    expect(isMember(lidGroup(), ctx)).toBe(true);
    expect(isMember({ ...pnGroup(), participants: [{ id: ALICE }] }, ctx)).toBe(false);
  });

  it('keeps an unmapped LID as the member JID', () => {
    const g = { ...lidGroup(), participants: [{ id: '207777777777777@lid', admin: null }] };
    expect(groupInfoOf(g, ctx, () => undefined).participants[0]).toMatchObject({ jid: '207777777777777@lid', phoneNumber: null, lid: '207777777777777@lid' });
  });

  it('parses group ids and participants', () => {
    expect(groupJidOf('120363000000000042')).toBe(GROUP);
    expect(groupJidOf(GROUP)).toBe(GROUP);
    expect(() => groupJidOf('15550101@s.whatsapp.net')).toThrow('groupId must be a group JID');
    expect(participantJidOf('+1 555-0101', 0)).toBe(ALICE);
    expect(participantJidOf('15550101@c.us', 0)).toBe(ALICE);
    expect(participantJidOf('15550101:2@s.whatsapp.net', 0)).toBe(ALICE);
    expect(participantJidOf(ALICE_LID, 0)).toBe(ALICE_LID);
    // in a LID-addressed group a known member is named by its LID
    expect(participantJidOf('+15550101', 0, lidGroup())).toBe(ALICE_LID);
    expect(participantJidOf('+15550102', 0, lidGroup())).toBe(BOB);
    expect(() => participantJidOf('alice', 3)).toThrow('body/participants/3 is not an international phone number or a user JID');
    expect(() => participantJidOf('123', 1, undefined, 'mentions')).toThrow('body/mentions/1');
  });

  it("maps WhatsApp's IQ error codes to API errors", () => {
    const iq = (code: number, text: string) => new Boom(text, { data: code });
    expect(groupError(iq(403, 'forbidden'), 'admin')).toMatchObject({ statusCode: 403, message: 'Not a group admin' });
    expect(groupError(iq(401, 'not-authorized'), 'admin')).toMatchObject({ statusCode: 403, message: 'Not a group admin' });
    expect(groupError(iq(403, 'forbidden'), 'read')).toMatchObject({ statusCode: 404, message: 'Group not found' });
    expect(groupError(iq(404, 'item-not-found'), 'admin')).toMatchObject({ statusCode: 404, message: 'Group not found' });
    // metadata queries carry the code as the Boom's status (rc14 extractGroupMetadata)
    expect(groupError(new Boom('item-not-found', { statusCode: 404 }), 'read')).toMatchObject({ statusCode: 404 });
    expect(groupError(iq(400, 'bad-request'), 'member')).toMatchObject({ statusCode: 400 });
    expect(groupError(new Error('Connection Closed'), 'admin')).toMatchObject({ statusCode: 502, message: 'The group request failed: Connection Closed' });
  });
});
