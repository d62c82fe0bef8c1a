/**
 * App-state sync (the `w:sync:app:state` collections) as far as the sandbox needs it: each account's phone has one
 * app-state sync key and shares it with every companion it links, and applies the `critical_block` patches its
 * companions write (the push name, Baileys `updateProfileName` → `chatModify({ pushNameSetting })`).
 *
 * Protocol (Baileys rc14): the key arrives as a self-only `protocolMessage` APP_STATE_SYNC_KEY_SHARE from the
 * account's own phone (lib/Utils/process-message.js stores each `keys[].keyData` under the base64 of
 * `keyId.keyId` and sets `creds.myAppStateKeyId`); without it `appPatch` throws "App state key not present!".
 * A patch is `<iq type="set" xmlns="w:sync:app:state"><sync><collection name version><patch>SyncdPatch</patch>`
 * (lib/Socket/chats.js appPatch); its mutations are AES-CBC encrypted and HMAC'd with keys expanded from the key
 * data (lib/Utils/chat-utils.js), which `decodeSyncdMutations` checks and decrypts. Any other request is echoed at
 * its version with no patches, so the client marks every collection synced (pitfall D3).
 */
import { randomBytes } from 'node:crypto';
import {
  decodeSyncdMutations,
  getBinaryNodeChild,
  getBinaryNodeChildren,
  newLTHashState,
  proto,
  type BinaryNode,
} from '@whiskeysockets/baileys';
import type Database from 'better-sqlite3';
import type { SandboxContext } from './context.ts';
import type { ClientConnection } from './session.ts';

/** One account's app-state sync key. */
export interface AppStateKey {
  /** 6 bytes (WhatsApp's key ids are 6 bytes: 2 of device index, 4 of epoch). */
  keyId: Buffer;
  /** 32 bytes of key data, expanded by HKDF into the index, value, MAC and snapshot keys. */
  keyData: Buffer;
  /** ms since the epoch. */
  createdAt: number;
}

/** Longest push name accepted from a patch (WhatsApp's limit is 25 characters). */
export const MAX_PUSH_NAME = 25;

/** The app-state keys of the accounts (`app_state_keys`, `app_state_key_shares`, sandbox schema v6). */
export class AppStateKeys {
  readonly #get: Database.Statement<[string], { key_id: Buffer; key_data: Buffer; created_at: number }>;
  readonly #insert: Database.Statement<[string, Buffer, Buffer, number]>;
  readonly #shared: Database.Statement<[string, number], { one: number }>;
  readonly #markShared: Database.Statement<[string, number]>;

  constructor(private readonly db: Database.Database) {
    this.#get = db.prepare('SELECT key_id, key_data, created_at FROM app_state_keys WHERE pn = ?');
    this.#insert = db.prepare('INSERT OR IGNORE INTO app_state_keys (pn, key_id, key_data, created_at) VALUES (?, ?, ?, ?)');
    this.#shared = db.prepare('SELECT 1 AS one FROM app_state_key_shares WHERE pn = ? AND device_id = ?');
    this.#markShared = db.prepare('INSERT OR IGNORE INTO app_state_key_shares (pn, device_id) VALUES (?, ?)');
  }

  /** The account's key, made (and stored) on first use. Call inside a transaction or an admin-serialized write. */
  keyOf(pn: string): AppStateKey {
    let row = this.#get.get(pn);
    if (!row) {
      this.#insert.run(pn, randomBytes(6), randomBytes(32), Date.now());
      row = this.#get.get(pn)!;
    }
    return { keyId: row.key_id, keyData: row.key_data, createdAt: row.created_at };
  }

  /** Whether the phone already queued its key for that companion. */
  sharedWith(pn: string, deviceId: number): boolean {
    return this.#shared.get(pn, deviceId) !== undefined;
  }

  /**
   * The key-share message for a companion of `pn` (to queue from the phone), marking it shared: both in the caller's
   * transaction, so a crash either queues and marks, or neither.
   */
  shareFor(pn: string, deviceId: number): proto.IMessage {
    const key = this.keyOf(pn);
    this.#markShared.run(pn, deviceId);
    return {
      protocolMessage: {
        type: proto.Message.ProtocolMessage.Type.APP_STATE_SYNC_KEY_SHARE,
        appStateSyncKeyShare: {
          keys: [
            {
              keyId: { keyId: key.keyId },
              keyData: {
                keyData: key.keyData,
                fingerprint: { rawId: key.keyId.readUInt32BE(2), currentIndex: 0, deviceIndexes: [0] },
                timestamp: key.createdAt,
              },
            },
          ],
        },
      },
    };
  }

  /** Run `fn` in an immediate transaction of the sandbox database. */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }
}

/**
 * `iq set w:sync:app:state` from a companion: every `<patch>` of a collection is applied by the account's phone
 * (a `setting_pushName` mutation renames the account); the reply echoes each collection at its version.
 * A patch that cannot be decoded with the account's key is answered `400 bad-request` (nothing applied).
 */
export async function handleAppStateIq(ctx: SandboxContext, conn: ClientConnection, iq: BinaryNode): Promise<void> {
  const sync = getBinaryNodeChild(iq, 'sync');
  const collections = getBinaryNodeChildren(sync, 'collection');
  const pn = conn.pn;
  if (iq.attrs.type === 'set' && pn !== undefined) {
    for (const collection of collections) {
      for (const patchNode of getBinaryNodeChildren(collection, 'patch')) {
        if (!(patchNode.content instanceof Uint8Array)) continue;
        try {
          await applyPatch(ctx, pn, patchNode.content);
        } catch (err) {
          conn.log.info({ err, collection: collection.attrs.name }, 'app-state patch refused');
          return conn.replyError(iq, '400', 'bad-request');
        }
      }
    }
  }
  conn.reply(iq, [
    {
      tag: 'sync',
      attrs: {},
      content: collections.map((c) => ({ tag: 'collection', attrs: { name: c.attrs.name ?? '', version: c.attrs.version ?? '0' } })),
    },
  ]);
}

/** Decrypts one SyncdPatch with the account's key (MACs checked) and applies the mutations the phone knows. */
async function applyPatch(ctx: SandboxContext, pn: string, bytes: Uint8Array): Promise<void> {
  const patch = proto.SyncdPatch.decode(bytes);
  const key = ctx.appState.keyOf(pn);
  const keyName = key.keyId.toString('base64');
  const names: string[] = [];
  await decodeSyncdMutations(
    patch.mutations,
    newLTHashState(),
    async (id) => (id === keyName ? proto.Message.AppStateSyncKeyData.fromObject({ keyData: key.keyData }) : undefined),
    ({ syncAction, index }) => {
      const name = syncAction.value?.pushNameSetting?.name;
      if (index[0] === 'setting_pushName' && typeof name === 'string') names.push(name);
    },
    true,
  );
  const name = names.at(-1)?.trim();
  if (name && name.length <= MAX_PUSH_NAME) ctx.accounts.setPushName(pn, name);
}
