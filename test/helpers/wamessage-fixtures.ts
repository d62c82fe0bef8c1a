/**
 * Loader of the cited WAMessage fixture corpus (test/fixtures/wamessages/*.json, format in its README.md).
 * Each fixture's `message` is the JSON form of a proto.WebMessageInfo (bytes as base64, 64-bit numbers as strings,
 * enums by name); it is turned into a proto with `fromObject` and round-tripped through the wire encoding, as
 * messages are on the wire and in our store. Addressing alternates (`remoteJidAlt`, `participantAlt`, the legacy
 * `senderPn`/`participantPn`/`senderLid`, `addressingMode`) are not proto fields: Baileys sets them on the key from
 * stanza attributes, so they are copied back onto the decoded key.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { proto, type WAMessage } from '@whiskeysockets/baileys';

export const FIXTURE_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'wamessages');

export interface WAMessageFixture {
  /** File it came from, and its name within it. */
  file: string;
  name: string;
  /** Which kind (issue #13 vocabulary, or reaction/edit/revoke/poll_update) and addressing form it covers. */
  kind: string;
  addressing: string;
  /** URL of the public source. */
  source: string;
  capture: 'verbatim' | 'anonymised' | 'reconstructed';
  note?: string;
  message: Record<string, unknown>;
  /** For messages that are not chat content: what `classify` must say. */
  classify?: string;
  /** The LID↔PN pairs the key must yield (checked when given). */
  lidPairs?: Array<{ lid: string; pn: string }>;
  /** The Message the model must produce (a subset of fields; unnamed structured fields must be null), or null. */
  expected: Record<string, unknown> | null;
}

/**
 * Sources that define fields rather than publish a message: Baileys' `WAProto.proto` and Baileys' own source code.
 * A fixture citing one of these is built from field names, not from a payload someone captured and published.
 */
const FIELD_DEFINITION_SOURCES = [/\/WAProto\/WAProto\.proto$/, /^https:\/\/github\.com\/WhiskeySockets\/Baileys\/blob\/[^/]+\/src\//];

/** Whether a fixture's source is a published payload (an issue/PR/discussion, a gateway's webhook sample or test data). */
export function restsOnPublishedPayload(f: Pick<WAMessageFixture, 'source'>): boolean {
  return !FIELD_DEFINITION_SOURCES.some((re) => re.test(f.source));
}

/** Every fixture of the corpus, in file order. */
export function loadWAMessageFixtures(): WAMessageFixture[] {
  const out: WAMessageFixture[] = [];
  for (const file of fs.readdirSync(FIXTURE_DIR).filter((f) => f.endsWith('.json')).sort()) {
    const { fixtures } = JSON.parse(fs.readFileSync(path.join(FIXTURE_DIR, file), 'utf8')) as { fixtures: Omit<WAMessageFixture, 'file'>[] };
    for (const f of fixtures) out.push({ file, ...f });
  }
  return out;
}

/** The WAMessage of a fixture, as Baileys would hand it over. */
export function toWAMessage(f: WAMessageFixture): WAMessage {
  const info = proto.WebMessageInfo.fromObject(f.message);
  const decoded = proto.WebMessageInfo.decode(proto.WebMessageInfo.encode(info).finish()) as WAMessage;
  decoded.key = { ...decoded.key, ...(f.message.key as WAMessage['key']) };
  return decoded;
}
