/**
 * The cited fixture corpus (test/fixtures/wamessages) through the real message model: every real-shaped WAMessage
 * must produce exactly the Message stored next to it (kind, type, text, structured content, addressing), or be
 * classified as the non-content message it is (reactions, edits, revokes, poll votes).
 */
import { describe, expect, it } from 'vitest';
import { EMPTY_CONTENT, MESSAGE_KINDS, MESSAGE_TYPES, typeOfKind } from '../../service/db/messages.ts';
import { classify, lidPairsOf, toStoredMessage, type ModelContext } from '../../service/engine/message-model.ts';
import { loadWAMessageFixtures, restsOnPublishedPayload, toWAMessage } from '../helpers/wamessage-fixtures.ts';
import { mediaUrl } from '../../service/db/media-url.ts';

const ctx: ModelContext = {
  mediaUrl: (file) => mediaUrl('/api', 'c1', file), // the fixtures' expected URLs are relative to the origin
  ownJid: '15550100@s.whatsapp.net',
  ownLid: '209999999999999@lid',
  pnForLid: (lid) => (lid === '201234567890123@lid' ? '15550101@s.whatsapp.net' : undefined),
};

const fixtures = loadWAMessageFixtures();

describe('WAMessage fixture corpus', () => {
  it('has at least 40 cited fixtures covering every kind and addressing form', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(40);
    for (const f of fixtures) {
      expect(f.source, f.name).toMatch(/^https:\/\/github\.com\//);
      expect(['verbatim', 'anonymised', 'reconstructed'], f.name).toContain(f.capture);
    }
    const kinds = new Set(fixtures.map((f) => f.kind));
    for (const k of [...MESSAGE_KINDS, 'reaction', 'edit', 'revoke', 'poll_update']) {
      if (k === 'revoked') continue; // a stored message becomes `revoked` when a `revoke` arrives
      expect(kinds, k).toContain(k);
    }
    const forms = new Set(fixtures.map((f) => f.addressing));
    for (const a of ['pn', 'lid', 'group', 'group-lid', 'status-lid']) expect(forms, a).toContain(a);
    expect(new Set(fixtures.map((f) => f.name)).size).toBe(fixtures.length);
  });

  it('rests on published payloads: at least 40 fixtures cite a published WAMessage, not a field definition', () => {
    // Issue #13: "gathered from public sources you can cite". WAProto.proto or Baileys' source code define fields; they
    // do not publish a message, so fixtures citing only them do not count.
    const published = fixtures.filter(restsOnPublishedPayload);
    expect(published.length, `published-payload fixtures: ${published.length} of ${fixtures.length}`).toBeGreaterThanOrEqual(40);
    expect(restsOnPublishedPayload({ source: 'https://github.com/WhiskeySockets/Baileys/blob/master/WAProto/WAProto.proto' })).toBe(false);
    expect(restsOnPublishedPayload({ source: 'https://github.com/WhiskeySockets/Baileys/blob/master/src/Utils/messages.ts' })).toBe(false);
    expect(restsOnPublishedPayload({ source: 'https://github.com/WhiskeySockets/Baileys/issues/716' })).toBe(true);
    // verbatim/anonymised captures must come from a published payload
    for (const f of fixtures) if (f.capture !== 'reconstructed') expect(restsOnPublishedPayload(f), f.name).toBe(true);
  });

  for (const f of fixtures) {
    it(`${f.file} › ${f.name} (${f.capture})`, () => {
      const msg = toWAMessage(f);
      if (f.lidPairs) expect(lidPairsOf(msg.key)).toEqual(f.lidPairs);
      const stored = toStoredMessage(msg, ctx);
      if (f.expected === null) {
        expect(stored).toBeUndefined();
        expect(classify(msg).kind).toBe(f.classify);
        return;
      }
      expect(stored).toBeDefined();
      const m = stored!;
      expect(m).toMatchObject(f.expected);
      // type stays within the spec's seven and follows kind; structured fields not named are null
      expect(MESSAGE_TYPES).toContain(m.type);
      expect(m.type).toBe(typeOfKind(m.kind));
      for (const k of Object.keys(EMPTY_CONTENT) as Array<keyof typeof EMPTY_CONTENT>) {
        if (!(k in f.expected)) expect(m[k], `${k} of ${f.name}`).toBeNull();
      }
      if (m.kind !== 'unsupported') expect(m.rawType).toBeNull();
      if (m.kind === 'poll') expect(m.messageSecret?.length).toBe(32);
    });
  }
});
