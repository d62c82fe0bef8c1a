/**
 * Baileys authentication state (creds + Signal key store) kept in SQLite through `db/auth-state.ts`.
 * Values are serialised with Baileys' BufferJSON (Buffers as `{type:'Buffer', data:<base64>}`), as its own
 * file store does (`lib/Utils/use-multi-file-auth-state.js`); app-state sync keys are re-hydrated into protos.
 * `keys.set` of one call is one SQLite transaction, so a crash never leaves a half-written key batch.
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

/** Loads (or initialises and stores) the auth state of `connectionId`. */
export function loadAuthState(repo: AuthStateRepo, connectionId: string): SqliteAuthState {
  const stored = repo.getCreds(connectionId);
  const creds = stored ? (decode(stored) as AuthenticationCreds) : initAuthCreds();
  if (!stored) repo.putCreds(connectionId, encode(creds));

  const keys: SignalKeyStore = {
    get<T extends keyof SignalDataTypeMap>(type: T, ids: string[]) {
      const found = repo.getKeys(connectionId, type, ids);
      const out: { [id: string]: SignalDataTypeMap[T] } = {};
      for (const [id, text] of found) {
        let value = decode(text);
        if (type === 'app-state-sync-key' && value) {
          value = proto.Message.AppStateSyncKeyData.fromObject(value as object);
        }
        out[id] = value as SignalDataTypeMap[T];
      }
      return out;
    },
    set(data: SignalDataSet) {
      const rows: Array<[string, string, string | null]> = [];
      for (const [type, entries] of Object.entries(data)) {
        for (const [id, value] of Object.entries(entries ?? {})) {
          rows.push([type, id, value === null || value === undefined ? null : encodeKey(type, value)]);
        }
      }
      if (rows.length) repo.setKeys(connectionId, rows);
    },
    clear() {
      repo.clear(connectionId);
    },
  };

  return { creds, keys, saveCreds: () => repo.putCreds(connectionId, encode(creds)) };
}
