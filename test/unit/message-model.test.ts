/**
 * The message model on real-shaped WAMessage protos: every wrapper real traffic carries, quoted replies,
 * LID chats and senders, and classification of reactions, edits, revokes and protocol messages.
 * Each fixture round-trips through protobuf encoding first, as messages do on the wire and in our store.
 */
import { createRequire } from 'node:module';
import { proto, type WAMessage } from '@whiskeysockets/baileys';
import type { Archiver, ArchiverOptions } from 'archiver';
import { describe, expect, it } from 'vitest';
import { classify, mediaFileName, mediaFileNameOf, toStoredMessage, type ModelContext } from '../../service/engine/message-model.ts';
import { isSafeMediaName, MediaStore, sniffMimetype } from '../../service/engine/media-store.ts';
import { buildVcard, loadMedia } from '../../service/engine/outgoing.ts';

/** An ISO BMFF file start: an `ftyp` box with `brand` as major and compatible brand. */
function ftyp(brand: string): Buffer {
  const b = Buffer.alloc(32);
  b.writeUInt32BE(24, 0);
  b.write('ftyp', 4, 'latin1');
  b.write(brand, 8, 'latin1');
  b.write(brand, 16, 'latin1');
  return b;
}

/** The first Ogg page of an Opus stream (its `OpusHead` packet). */
const ogg = () => Buffer.concat([Buffer.from('OggS\0\x02', 'latin1'), Buffer.alloc(22), Buffer.from('OpusHead'), Buffer.alloc(64)]);

/** archiver 7's factory (CommonJS, as service/http/routes/search.ts loads it). */
const createArchive = createRequire(import.meta.url)('archiver') as (format: 'zip', options?: ArchiverOptions) => Archiver;

/** A ZIP of `entries` (name → content), deflated, written by archiver as a real ZIP writer would. */
async function zipOf(entries: Record<string, string>): Promise<Buffer> {
  const archive = createArchive('zip', { zlib: { level: 9 } });
  const chunks: Buffer[] = [];
  archive.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve, reject) => archive.on('end', resolve).on('error', reject));
  for (const [name, content] of Object.entries(entries)) archive.append(content, { name });
  await archive.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** A minimal Word document: the package's content types, its relationships and the main part. */
const docx = () =>
  zipOf({
    '[Content_Types].xml':
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
      '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
      '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
      '<Default Extension="xml" ContentType="application/xml"/>' +
      '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>' +
      '</Types>',
    '_rels/.rels':
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
      '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
      '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>' +
      '</Relationships>',
    'word/document.xml':
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' +
      '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Invoice 42</w:t></w:r></w:p></w:body></w:document>',
  });
const DOCX_MIME = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
import { parseRange } from '../../service/http/routes/media.ts';
import { mediaUrl } from '../../service/db/media-url.ts';

const OWN = '15550100@s.whatsapp.net';
const ALICE = '15550101@s.whatsapp.net';
const ALICE_LID = '201234567890123@lid';

const ctx: ModelContext = {
  mediaUrl: (file) => mediaUrl('http://127.0.0.1:7575/api', 'c1', file),
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
      expect(m.media).toEqual({ url: 'http://127.0.0.1:7575/api/connections/c1/media/ABC123.jpg', mimetype: 'image/jpeg', filename: null, size: 2048 });
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

  it('keeps type within the spec seven and puts the precise kind into kind (rawType for unsupported ones)', () => {
    expect(toStoredMessage(base({ stickerMessage: { mimetype: 'image/webp' } }), ctx)).toMatchObject({ type: 'image', kind: 'sticker', rawType: null });
    expect(toStoredMessage(base({ pollCreationMessage: { name: 'Lunch?' } }), ctx)).toMatchObject({ type: 'text', kind: 'poll', text: 'Lunch?' });
    expect(toStoredMessage(base({ eventMessage: { name: 'Party' } }), ctx)).toMatchObject({ type: 'text', kind: 'unsupported', rawType: 'eventMessage' });
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

  it('maps group participants in PN and LID form, with participant_pn, unknown LIDs and own LID', () => {
    const GROUP = '120363000000000077@g.us';
    const UNKNOWN_LID = '207777777777777@lid';
    const pn = base({ conversation: 'pn' }, { remoteJid: GROUP, participant: ALICE });
    expect(toStoredMessage(pn, ctx)).toMatchObject({ id: `false_${GROUP}_ABC123`, chatId: GROUP, senderJid: ALICE, senderPushName: 'Alice', fromMe: false });
    // a LID-addressed group names the sender by LID with its phone number alongside (participant_pn → participantAlt)
    const lidWithAlt = base({ conversation: 'lid' }, { remoteJid: GROUP, participant: UNKNOWN_LID, participantAlt: '15550109@s.whatsapp.net' });
    expect(toStoredMessage(lidWithAlt, ctx)!.senderJid).toBe('15550109@s.whatsapp.net');
    // a device suffix is dropped
    const device = base({ conversation: 'device' }, { remoteJid: GROUP, participant: '15550101:3@s.whatsapp.net' });
    expect(toStoredMessage(device, ctx)!.senderJid).toBe(ALICE);
    // no mapping known: the LID stays the sender
    const unknown = base({ conversation: 'who' }, { remoteJid: GROUP, participant: UNKNOWN_LID });
    expect(toStoredMessage(unknown, ctx)!.senderJid).toBe(UNKNOWN_LID);
    // the account's own LID as participant of a message from its other device: fromMe, own PN JID
    const own = base({ conversation: 'mine' }, { remoteJid: GROUP, participant: ctx.ownLid!, fromMe: true });
    expect(toStoredMessage(own, ctx)).toMatchObject({ id: `true_${GROUP}_ABC123`, fromMe: true, senderJid: OWN, senderPushName: '' });
    // a reply quoting our own message by our LID is a reply to our message
    const reply = base(
      { extendedTextMessage: { text: 'yes', contextInfo: { stanzaId: 'Q1', participant: ctx.ownLid! } } },
      { remoteJid: GROUP, participant: ALICE_LID },
    );
    expect(toStoredMessage(reply, ctx)).toMatchObject({ senderJid: ALICE, quotedMessageId: `true_${GROUP}_Q1` });
  });

  it('maps mentions (text and captions) to phone-number JIDs where known', () => {
    const GROUP = '120363000000000077@g.us';
    const text = base(
      { extendedTextMessage: { text: '@15550100 @201234567890123', contextInfo: { mentionedJid: [OWN, ALICE_LID, '207777777777777@lid'] } } },
      { remoteJid: GROUP, participant: ALICE },
    );
    expect(toStoredMessage(text, ctx)!.mentions).toEqual([OWN, ALICE, '207777777777777@lid']);
    const caption = base({ imageMessage: { mimetype: 'image/png', caption: 'look @15550100', contextInfo: { mentionedJid: [ctx.ownLid!] } } }, { remoteJid: GROUP, participant: ALICE });
    expect(toStoredMessage(caption, ctx)!.mentions).toEqual([OWN]);
    // an ephemeral-wrapped group reply keeps its quote and mentions
    const wrapped = base(
      { ephemeralMessage: { message: { extendedTextMessage: { text: 'ok @15550100', contextInfo: { stanzaId: 'Q2', participant: ALICE, mentionedJid: [OWN], expiration: 86400 } } } } },
      { remoteJid: GROUP, participant: ALICE_LID },
    );
    expect(toStoredMessage(wrapped, ctx)).toMatchObject({ text: 'ok @15550100', quotedMessageId: `false_${GROUP}_Q2`, mentions: [OWN], senderJid: ALICE });
    expect(toStoredMessage(base({ conversation: 'plain' }), ctx)!.mentions).toEqual([]);
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

  it("keeps an undecryptable message from the account's own devices (category peer) out of the chat log", () => {
    const stub = (category?: string) =>
      ({ ...wire({ key: { remoteJid: ALICE, fromMe: true, id: 'P1' }, messageStubType: proto.WebMessageInfo.StubType.CIPHERTEXT }), ...(category && { category }) }) as WAMessage;
    expect(classify(stub('peer'))).toEqual({ kind: 'protocol' });
    expect(toStoredMessage(stub('peer'), ctx)).toBeUndefined();
    // A contact's message that could not be decrypted yet stays a placeholder: its retry replaces it.
    expect(classify(stub())).toEqual({ kind: 'undecryptable' });
    expect(toStoredMessage(stub(), ctx)).toMatchObject({ id: `true_${ALICE}_P1`, kind: 'undecryptable' });
  });

  it('derives safe media file names', () => {
    expect(mediaFileName('3EB0/../x', 'image/png')).toBe('3EB0____x.png');
    expect(mediaFileName('A', 'application/x-unknown-thing')).toBe('A.bin');
    expect(mediaFileName('A', 'audio/ogg; codecs=opus')).toBe('A.ogg');
  });
});

describe('message model: media and the media store rules', () => {
  it('gives media a proxy URL, mimetype, original file name and size; mediaFileNameOf reads it back', () => {
    const doc = toStoredMessage(
      base({ documentMessage: { mimetype: 'application/pdf', fileName: 'Q3 report.pdf', fileLength: 12345, caption: 'numbers' } }, { id: 'DOC/1' }),
      ctx,
    )!;
    expect(doc).toMatchObject({ type: 'document', text: 'numbers' });
    expect(doc.media).toEqual({ url: 'http://127.0.0.1:7575/api/connections/c1/media/DOC_1.pdf', mimetype: 'application/pdf', filename: 'Q3 report.pdf', size: 12345 });
    expect(mediaFileNameOf(doc.media!)).toBe('DOC_1.pdf');

    const voice = toStoredMessage(base({ audioMessage: { mimetype: 'audio/ogg; codecs=opus', ptt: true, fileLength: 99 } }), ctx)!;
    expect(voice).toMatchObject({ type: 'audio', media: { url: 'http://127.0.0.1:7575/api/connections/c1/media/ABC123.ogg', mimetype: 'audio/ogg; codecs=opus' } });
    const sticker = toStoredMessage(base({ stickerMessage: { mimetype: 'image/webp' } }), ctx)!;
    expect(sticker).toMatchObject({ type: 'image', kind: 'sticker', media: { url: 'http://127.0.0.1:7575/api/connections/c1/media/ABC123.webp' } });
    const ptv = toStoredMessage(base({ ptvMessage: { mimetype: 'video/mp4' } }), ctx)!;
    expect(ptv).toMatchObject({ type: 'video', media: { mimetype: 'video/mp4' } });
    expect(toStoredMessage(base({ locationMessage: { degreesLatitude: 1, degreesLongitude: 2 } }), ctx)!.media).toBeNull();
  });

  it('classifies a reaction removal and an edit wrapped in editedMessage', () => {
    const removal = classify(base({ reactionMessage: { key: { id: 'T1', remoteJid: ALICE, fromMe: true }, text: '' } }));
    expect(removal).toMatchObject({ kind: 'reaction', emoji: '' });
    const wrapped = classify(
      base({
        editedMessage: {
          message: {
            protocolMessage: { type: proto.Message.ProtocolMessage.Type.MESSAGE_EDIT, key: { id: 'T2' }, editedMessage: { conversation: 'new' } },
          },
        },
      }),
    );
    expect(wrapped).toMatchObject({ kind: 'edit', targetKey: { id: 'T2' } });
  });

  it('accepts only names that stay inside the folder', () => {
    for (const ok of ['ABC.jpg', 'a_b-c.pdf', '3EB0.ogg']) expect(isSafeMediaName(ok)).toBe(true);
    for (const bad of ['', '.', '..', '../x', 'a/b', 'a\\b', 'a\0b', '.hidden', 'x..y', 'x'.repeat(201)]) expect(isSafeMediaName(bad)).toBe(false);
    const store = new MediaStore('/data/media');
    expect(store.pathFor('c1', 'a.jpg')).toBe('/data/media/c1/a.jpg');
    expect(store.pathFor('c1', '../c2/a.jpg')).toBeUndefined();
    expect(store.dir('../etc')).toBe('/data/media/___etc');
  });

  it('sniffs types from the bytes with file-type (HEIC, AVIF and QuickTime too)', async () => {
    const cases: Array<[number[] | string | Buffer, string | undefined]> = [
      [[0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0], 'image/jpeg'],
      [[0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52], 'image/png'],
      ['GIF89a', 'image/gif'],
      ['RIFF\0\0\0\0WEBPVP8 ', 'image/webp'],
      ['%PDF-1.7\n', 'application/pdf'],
      [ogg(), 'audio/ogg'],
      [ftyp('isom'), 'video/mp4'],
      [ftyp('M4A '), 'audio/mp4'],
      [ftyp('3gp4'), 'video/3gpp'],
      [ftyp('heic'), 'image/heic'],
      [ftyp('avif'), 'image/avif'],
      [ftyp('qt  '), 'video/quicktime'],
      ['hello world hello world', undefined],
    ];
    for (const [input, expected] of cases) {
      const bytes = Buffer.isBuffer(input) ? input : typeof input === 'string' ? Buffer.from(input, 'latin1') : Buffer.from(input);
      expect(await sniffMimetype(bytes), String(input)).toBe(expected);
    }
  });

  it('sniffs a DOCX as a Word document, not as the ZIP it is; a send-document without a mimetype takes that type', async () => {
    const bytes = await docx();
    expect(bytes.subarray(0, 4).toString('latin1')).toBe('PK\x03\x04');
    expect(await sniffMimetype(bytes)).toBe(DOCX_MIME);
    // the same container without the Word parts is a plain ZIP
    expect(await sniffMimetype(await zipOf({ 'notes.txt': 'just a zip' }))).toBe('application/zip');
    const loaded = await loadMedia({ type: 'document', chatId: '15550101', base64: bytes.toString('base64'), filename: 'invoice.docx' });
    expect(loaded.mimetype).toBe(DOCX_MIME);
  });

  it.each([
    ['image', ftyp('heic'), undefined, /^the image data is image\/heic; accepted: image\/jpeg, image\/png, image\/webp$/],
    ['image', ftyp('avif'), 'image/png', /^the image data is image\/avif; accepted/],
    ['image', Buffer.from('random bytes named fake.png, no image at all'), 'image/png', /^could not recognise the image format/],
    ['video', ftyp('qt  '), 'video/mp4', /^the video data is video\/quicktime; accepted: video\/mp4, video\/3gpp$/],
    ['audio', Buffer.concat([Buffer.from('OggS'), Buffer.alloc(64, 5)]), 'audio/ogg', /^the audio data is application\/ogg; accepted/],
    ['audio', Buffer.from('%PDF-1.7\n'), undefined, /^the audio data is application\/pdf; accepted/],
  ] as const)('refuses a %s send whose bytes are not a supported file of that kind (declared %#)', async (kind, bytes, mimetype, message) => {
    const input = { type: kind, chatId: '15550101', base64: bytes.toString('base64'), ...(mimetype && { mimetype }) };
    await expect(loadMedia(input)).rejects.toMatchObject({ statusCode: 400, message: expect.stringMatching(message) });
  });

  it('accepts what the bytes say for images, videos and audio', async () => {
    expect((await loadMedia({ type: 'video', chatId: '15550101', base64: ftyp('isom').toString('base64') })).mimetype).toBe('video/mp4');
    expect((await loadMedia({ type: 'audio', chatId: '15550101', base64: ftyp('M4A ').toString('base64') })).mimetype).toBe('audio/mp4');
    expect((await loadMedia({ type: 'audio', chatId: '15550101', base64: ogg().toString('base64'), ptt: true })).mimetype).toBe('audio/ogg; codecs=opus');
  });

  it('builds a vCard with the WhatsApp id and parses byte ranges', () => {
    expect(buildVcard('Doe, Jane', '15550199')).toBe(
      'BEGIN:VCARD\nVERSION:3.0\nFN:Doe\\, Jane\nTEL;type=CELL;type=VOICE;waid=15550199:+15550199\nEND:VCARD',
    );
    expect(parseRange(undefined, 10)).toBeUndefined();
    expect(parseRange('bytes=2-4', 10)).toEqual({ start: 2, end: 4 });
    expect(parseRange('bytes=-3', 10)).toEqual({ start: 7, end: 9 });
    expect(parseRange('bytes=8-', 10)).toEqual({ start: 8, end: 9 });
    expect(parseRange('bytes=0-1,4-5', 10)).toBeUndefined();
    expect(parseRange('bytes=10-', 10)).toBe('invalid');
  });
});
