/**
 * The message model on real-shaped WAMessage protos: every wrapper real traffic carries, quoted replies,
 * LID chats and senders, and classification of reactions, edits, revokes and protocol messages.
 * Each fixture round-trips through protobuf encoding first, as messages do on the wire and in our store.
 */
import { proto, type WAMessage } from '@whiskeysockets/baileys';
import { describe, expect, it } from 'vitest';
import { classify, mediaFileName, toStoredMessage, type ModelContext } from '../../service/engine/message-model.ts';

const OWN = '15550100@s.whatsapp.net';
const ALICE = '15550101@s.whatsapp.net';
const ALICE_LID = '201234567890123@lid';

const ctx: ModelContext = {
  connectionPath: '/api/connections/c1',
  ownJid: OWN,
  ownLid: '209999999999999@lid',
  pnForLid: (lid) => (lid === ALICE_LID ? ALICE : undefined),
};

/** Encodes and decodes like the wire does, so defaults and Longs look real. */
function wire(m: proto.IWebMessageInfo & { key: WAMessage['key'] }): WAMessage {
  const decoded = proto.WebMessageInfo.decode(proto.WebMessageInfo.encode(m).finish()) as WAMessage;
  // Addressing alternates (remoteJidAlt …) are not proto fields; Baileys sets them on the key from stanza attributes.
  decoded.key = { ...decoded.key, ...m.key };
  return decoded;
}

const base = (message: proto.IMessage, key: Partial<WAMessage['key']> = {}) =>
  wire({
    key: { remoteJid: ALICE, fromMe: false, id: 'ABC123', ...key },
    messageTimestamp: 1_700_000_123,
    pushName: 'Alice',
    message,
  });

describe('message model', () => {
  it('maps a plain conversation message', () => {
    const m = toStoredMessage(base({ conversation: 'hello' }), ctx)!;
    expect(m).toMatchObject({
      id: `false_${ALICE}_ABC123`,
      chatId: ALICE,
      keyId: 'ABC123',
      timestamp: 1_700_000_123,
      fromMe: false,
      senderJid: ALICE,
      senderPushName: 'Alice',
      type: 'text',
      text: 'hello',
      quotedMessageId: null,
      media: null,
      ack: null,
    });
    expect(proto.WebMessageInfo.decode(m.raw!).message?.conversation).toBe('hello');
  });

  it('maps an extended text reply to the quoted message id (own and contact messages)', () => {
    const replyToOwn = base({
      extendedTextMessage: { text: 'yes', contextInfo: { stanzaId: 'Q1', participant: OWN, quotedMessage: { conversation: 'q?' } } },
    });
    expect(toStoredMessage(replyToOwn, ctx)).toMatchObject({ type: 'text', text: 'yes', quotedMessageId: `true_${ALICE}_Q1` });
    const replyToAlice = base({ extendedTextMessage: { text: 'me too', contextInfo: { stanzaId: 'Q2', participant: ALICE } } });
    expect(toStoredMessage(replyToAlice, ctx)!.quotedMessageId).toBe(`false_${ALICE}_Q2`);
  });

  it('unwraps ephemeral, view-once v1/v2/extension and document-with-caption wrappers', () => {
    const image = { imageMessage: { mimetype: 'image/jpeg', caption: 'pic', fileLength: 2048 } };
    for (const wrapped of [
      { ephemeralMessage: { message: image } },
      { viewOnceMessage: { message: image } },
      { viewOnceMessageV2: { message: image } },
      { viewOnceMessageV2Extension: { message: image } },
      { ephemeralMessage: { message: { viewOnceMessageV2: { message: image } } } },
    ] satisfies proto.IMessage[]) {
      const m = toStoredMessage(base(wrapped), ctx)!;
      expect(m).toMatchObject({ type: 'image', text: 'pic' });
      expect(m.media).toEqual({ url: '/api/connections/c1/media/ABC123.jpg', mimetype: 'image/jpeg', filename: null, size: 2048 });
    }
    const doc = base({
      documentWithCaptionMessage: {
        message: { documentMessage: { mimetype: 'application/pdf', fileName: 'report.pdf', caption: 'Q3', fileLength: 99 } },
      },
    });
    expect(toStoredMessage(doc, ctx)).toMatchObject({
      type: 'document',
      text: 'Q3',
      media: { mimetype: 'application/pdf', filename: 'report.pdf', size: 99 },
    });
  });

  it('maps each media, location and contact kind', () => {
    expect(toStoredMessage(base({ videoMessage: { mimetype: 'video/mp4', caption: 'v' } }), ctx)!.type).toBe('video');
    expect(toStoredMessage(base({ audioMessage: { mimetype: 'audio/ogg; codecs=opus', ptt: true } }), ctx)!.media!.url).toMatch(/ABC123\.ogg$/);
    expect(toStoredMessage(base({ locationMessage: { degreesLatitude: 52.5, degreesLongitude: 13.4, name: 'Office', address: 'Main St 1' } }), ctx)).toMatchObject({
      type: 'location',
      text: 'Office, Main St 1',
      media: null,
    });
    expect(toStoredMessage(base({ contactMessage: { displayName: 'Bob', vcard: 'BEGIN:VCARD\nEND:VCARD' } }), ctx)).toMatchObject({ type: 'contact', text: 'Bob' });
  });

  it('keeps unsupported kinds with their real type name', () => {
    expect(toStoredMessage(base({ stickerMessage: { mimetype: 'image/webp' } }), ctx)!.type).toBe('sticker');
    expect(toStoredMessage(base({ pollCreationMessage: { name: 'Lunch?' } }), ctx)).toMatchObject({ type: 'pollCreation', text: 'Lunch?' });
  });

  it('maps LID chats to phone-number JIDs: from the key alternate, else the mapping store', () => {
    const viaAlt = base({ conversation: 'x' }, { remoteJid: '201111111111111@lid', remoteJidAlt: '15550155@s.whatsapp.net' });
    expect(toStoredMessage(viaAlt, ctx)).toMatchObject({ chatId: '15550155@s.whatsapp.net', senderJid: '15550155@s.whatsapp.net' });
    const viaStore = base({ conversation: 'x' }, { remoteJid: ALICE_LID });
    expect(toStoredMessage(viaStore, ctx)!.id).toBe(`false_${ALICE}_ABC123`);
    const unknown = base({ conversation: 'x' }, { remoteJid: '207777777777777@lid' });
    expect(toStoredMessage(unknown, ctx)!.chatId).toBe('207777777777777@lid');
  });

  it('maps group senders to their PN participant', () => {
    const g = base({ conversation: 'hi all' }, { remoteJid: '1203630@g.us', participant: ALICE_LID });
    expect(toStoredMessage(g, ctx)).toMatchObject({ chatId: '1203630@g.us', senderJid: ALICE });
  });

  it('maps own messages with their ack', () => {
    const own = wire({ key: { remoteJid: ALICE, fromMe: true, id: 'OWN1' }, messageTimestamp: 1, status: proto.WebMessageInfo.Status.DELIVERY_ACK, message: { conversation: 'hey' } });
    expect(toStoredMessage(own, ctx)).toMatchObject({ id: `true_${ALICE}_OWN1`, fromMe: true, senderJid: OWN, senderPushName: '', ack: 3 });
  });

  it('classifies reactions, edits, revokes and protocol messages, and keeps them out of the chat log', () => {
    const target = { remoteJid: ALICE, fromMe: true, id: 'T1' };
    const reaction = base({ reactionMessage: { key: target, text: '👍' } });
    expect(classify(reaction)).toMatchObject({ kind: 'reaction', emoji: '👍', targetKey: { id: 'T1' } });
    const edit = base({
      protocolMessage: { type: proto.Message.ProtocolMessage.Type.MESSAGE_EDIT, key: target, editedMessage: { conversation: 'fixed' } },
    });
    expect(classify(edit)).toMatchObject({ kind: 'edit', newContent: { conversation: 'fixed' } });
    expect(classify(base({ protocolMessage: { type: proto.Message.ProtocolMessage.Type.REVOKE, key: target } }))).toMatchObject({ kind: 'revoke' });
    const history = base({ protocolMessage: { type: proto.Message.ProtocolMessage.Type.HISTORY_SYNC_NOTIFICATION } });
    expect(classify(history)).toEqual({ kind: 'protocol' });
    for (const m of [reaction, edit, history]) expect(toStoredMessage(m, ctx)).toBeUndefined();
    expect(classify(wire({ key: { remoteJid: ALICE, id: 'S' }, messageStubType: 1 }))).toEqual({ kind: 'empty' });
  });

  it('derives safe media file names', () => {
    expect(mediaFileName('3EB0/../x', 'image/png')).toBe('3EB0____x.png');
    expect(mediaFileName('A', 'application/x-unknown-thing')).toBe('A.bin');
    expect(mediaFileName('A', 'audio/ogg; codecs=opus')).toBe('A.ogg');
  });
});
