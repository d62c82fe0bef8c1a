/**
 * Baileys authentication state (creds + Signal key store) kept in SQLite through `db/auth-state.ts`.
 * Values are serialised with Baileys' BufferJSON (Buffers as `{type:'Buffer', data:<base64>}`), as its own
 * file store does (`lib/Utils/use-multi-file-auth-state.js`); app-state sync keys are re-hydrated into protos.
 * The rows of one `keys.set` call are written in one SQLite transaction (its own, or the group commit that holds
 * the messages they decrypted), so a crash never leaves a half-written key batch.
 */
import {
  BufferJSON,
  initAuthCreds,
  proto,
  type AuthenticationCreds,
  type SignalDataSet,
  type SignalDataTypeMap,
  type SignalKeyStore,
} from '@whiskeysockets/baileys';
import type { AuthStateRepo } from '../db/auth-state.ts';

export interface SqliteAuthState {
  creds: AuthenticationCreds;
  keys: SignalKeyStore;
  /** Persists the whole creds object (Baileys mutates it in place before `creds.update`). */
  saveCreds(): void;
  /** Schedules the write of key updates that `holdWrites` kept back (call when it stops holding). */
  writeHeldKeys(): void;
}

const encode = (value: unknown): string => JSON.stringify(value, BufferJSON.replacer);
/**
 * Encodes a value of key type `type`. Signal sessions (written after every decrypt) are libsignal's
 * `SessionRecord.serialize()` output: plain strings and numbers, every key already base64
 * (node_modules/libsignal/src/session_record.js). For those the replacer, which costs a call per property, changes
 * nothing, so they are stringified plainly; should one ever hold a Buffer (its toJSON form `"type":"Buffer"`) or
 * a typed array (`{"0":…`), the replacer's encoding is used after all, so the stored text is always what
 * BufferJSON.reviver reads.
 */
function encodeKey(type: string, value: unknown): string {
  if (type !== 'session') return encode(value);
  const plain = JSON.stringify(value);
  return plain.includes('"type":"Buffer"') || plain.includes('{"0":') ? encode(value) : plain;
}
const decode = (text: string): unknown => JSON.parse(text, BufferJSON.reviver);

type KeyRows = Array<[type: string, id: string, value: string | null]>;

/** Decoded Signal keys kept per connection (sessions, sender keys, pre-keys…): a few KB each. */
const KEY_CACHE_MAX = 5_000;

/**
 * Loads (or initialises and stores) the auth state of `connectionId`.
 * @param opts.deferWrites schedules a function to run inside the transaction that commits next (the engine passes
 *   the store's `beforeCommit`): `keys.set` then only records the new values, and they are written once, at
 *   that commit — the Signal session of a contact is rewritten by every message of a burst. Reads see recorded
 *   values at once. Without it every `keys.set` writes at once, in a transaction of its own (`repo.setKeys`).
 * @param opts.holdWrites while it returns true, recorded values stay unwritten (still served to reads); then
 *   `writeHeldKeys()` schedules them (the session's frame gate holds a history chunk: commit-before-receipt.ts).
 */
export function loadAuthState(
  repo: AuthStateRepo,
  connectionId: string,
  opts: { deferWrites?: (flush: () => void) => void; holdWrites?: () => boolean } = {},
): SqliteAuthState {
  // Recorded values are written by a flush: deferred to the next commit, or at once in a transaction of its own.
  const scheduleFlush = opts.deferWrites ?? ((flush: () => void) => flush());
  const writeRows = opts.deferWrites
    ? (rows: KeyRows) => repo.writeKeys(connectionId, rows)
    : (rows: KeyRows) => repo.setKeys(connectionId, rows);
  const stored = repo.getCreds(connectionId);
  const creds = stored ? (decode(stored) as AuthenticationCreds) : initAuthCreds();
  if (!stored) repo.putCreds(connectionId, encode(creds));

  // Decoded values by `type.id`, least recently written or loaded first (evicted in that order): the Signal
  // session of a chatty contact is read and written for every message. Synchronous like the SQLite underneath, so
  // it needs no lock (Baileys' makeCacheableSignalKeyStore wraps every call in an async mutex and a TTL cache).
  // Shared objects, as there.
  const cache = new Map<string, unknown>();
  /** Values recorded by `set` and not yet written, by `type.id` (null = delete). */
  const unwrittenKeys = new Map<string, [type: string, id: string, value: unknown]>();
  let flushScheduled = false;
  /** Writes the recorded values and moves them to the cache. */
  const writeUnwritten = () => {
    flushScheduled = false;
    if (unwrittenKeys.size === 0 || opts.holdWrites?.()) return;
    const entries = [...unwrittenKeys];
    unwrittenKeys.clear();
    try {
      writeRows(entries.map(([, [type, id, value]]) => [type, id, value === null || value === undefined ? null : encodeKey(type, value)]));
    } catch (err) {
      // Not written: keep them recorded (newer values win) so the next `set` schedules them again.
      for (const [key, entry] of entries) if (!unwrittenKeys.has(key)) unwrittenKeys.set(key, entry);
      throw err;
    }
    for (const [key, [, , value]] of entries) if (value !== null && value !== undefined) remember(key, value);
  };
  const remember = (key: string, value: unknown) => {
    cache.delete(key);
    cache.set(key, value);
    if (cache.size > KEY_CACHE_MAX) cache.delete(cache.keys().next().value!);
  };
  const scheduleWrite = () => {
    if (!flushScheduled && unwrittenKeys.size > 0) {
      flushScheduled = true;
      scheduleFlush(writeUnwritten);
    }
  };
  const keys: SignalKeyStore = {
    get<T extends keyof SignalDataTypeMap>(type: T, ids: string[]) {
      const out: { [id: string]: SignalDataTypeMap[T] } = {};
      let missing: string[] | undefined;
      for (const id of ids) {
        const key = `${type}.${id}`;
        const unwritten = unwrittenKeys.get(key);
        const hit = unwritten ? unwritten[2] : cache.get(key);
        if (unwritten && (hit === null || hit === undefined)) continue; // deleted, not yet written
        if (hit === undefined) (missing ??= []).push(id);
        else out[id] = hit as SignalDataTypeMap[T];
      }
      if (missing) {
        for (const [id, text] of repo.getKeys(connectionId, type, missing)) {
          let value = decode(text);
          if (type === 'app-state-sync-key' && value) {
            value = proto.Message.AppStateSyncKeyData.fromObject(value as object);
          }
          if (value !== null && value !== undefined) remember(`${type}.${id}`, value);
          out[id] = value as SignalDataTypeMap[T];
        }
      }
      return out;
    },
    set(data: SignalDataSet) {
      for (const [type, entries] of Object.entries(data)) {
        for (const [id, value] of Object.entries(entries ?? {})) {
          const key = `${type}.${id}`;
          unwrittenKeys.set(key, [type, id, value ?? null]);
          cache.delete(key); // the recorded value wins until it is written
        }
      }
      scheduleWrite();
    },
    clear() {
      unwrittenKeys.clear();
      cache.clear();
      repo.clear(connectionId);
    },
  };

  return { creds, keys, saveCreds: () => repo.putCreds(connectionId, encode(creds)), writeHeldKeys: scheduleWrite };
}
