/**
 * libsignal state of the simulated phones (device 0 of each account) and the two operations the
 * sandbox needs: encrypt a message from a phone to a companion, and decrypt a companion's message
 * addressed to a phone (brief §B5 "Emulator side", §B6 step 4).
 *
 * Owns: the `SignalStorage` implementation over {@link Store} (sessions and identities are queued
 * writes — durable after `store.commit()`; the phone's prekeys are removed once used), the libsignal
 * address naming of companions (`<lidUser>_1.<device>`, as Baileys names LID addresses), and session
 * establishment from a companion's uploaded bundle (consuming one of its one-time prekeys).
 */
import { ProtocolAddress, SessionBuilder, SessionCipher, SessionRecord, type SignalStorage } from 'libsignal';
import { generateSignalPubKey } from '@whiskeysockets/baileys';
import type { AccountRow, DeviceRow, Store } from './store.ts';
import type { Accounts } from './accounts.ts';
import { KeyedMutex } from './keyed-mutex.ts';

export type EncType = 'pkmsg' | 'msg';

/** Bundle fields needed to open a session to a companion (from its upload or a retry receipt's `<keys>`). */
export interface CompanionBundle {
  registrationId: number;
  identityPub: Uint8Array;
  signedPreKeyId: number;
  signedPreKeyPub: Uint8Array;
  signedPreKeySig: Uint8Array;
  preKey?: { keyId: number; pub: Uint8Array } | undefined;
}

type E2ESession = Parameters<SessionBuilder['initOutgoing']>[0];

const prefixed = (key: Uint8Array): Buffer => Buffer.from(generateSignalPubKey(key));

/** The part of libsignal's `SessionRecord` its typings leave out: the open session and the remote's registration id. */
interface OpenSessionView {
  getOpenSession(): { registrationId?: number } | undefined;
}

/** libsignal address under which phones keep their session with companion `<lidUser>:<deviceId>`. */
export function companionAddress(lidUser: string, deviceId: number): ProtocolAddress {
  return new ProtocolAddress(`${lidUser}_1`, deviceId);
}

/** `SignalStorage` of one simulated phone. */
class PhoneStorage implements SignalStorage {
  constructor(
    private readonly store: Store,
    private readonly account: AccountRow,
  ) {}

  async loadSession(id: string): Promise<SessionRecord | undefined> {
    const json = this.store.loadSession(this.account.pn, id);
    // libsignal's typings say Uint8Array; at runtime (de)serialize works on a plain JSON object
    return json ? SessionRecord.deserialize(JSON.parse(json) as Uint8Array) : undefined;
  }

  async storeSession(id: string, session: SessionRecord): Promise<void> {
    this.store.storeSession(this.account.pn, id, JSON.stringify(session.serialize()));
  }

  isTrustedIdentity(identifier: string, identityKey: Uint8Array): boolean {
    // trust on first use, like WhatsApp; remember the latest key for bookkeeping
    const key = Buffer.from(identityKey);
    const known = this.store.getIdentity(this.account.pn, identifier);
    if (!known || !known.equals(key)) this.store.storeIdentity(this.account.pn, identifier, key);
    return true;
  }

  async loadPreKey(id: number | string): Promise<{ privKey: Buffer; pubKey: Buffer } | undefined> {
    const k = this.store.getPhonePreKey(this.account.pn, Number(id));
    return k && { privKey: k.priv, pubKey: prefixed(k.pub) };
  }

  removePreKey(id: number): void {
    this.store.removePhonePreKey(this.account.pn, id);
  }

  loadSignedPreKey(): { privKey: Buffer; pubKey: Buffer } {
    return { privKey: this.account.signedPreKeyPriv, pubKey: prefixed(this.account.signedPreKeyPub) };
  }

  getOurRegistrationId(): number {
    return this.account.registrationId;
  }

  getOurIdentity(): { privKey: Buffer; pubKey: Buffer } {
    return { privKey: this.account.identityPriv, pubKey: prefixed(this.account.identityPub) };
  }
}

/** Encrypt/decrypt on behalf of the simulated phones. */
export class Phones {
  private readonly storages = new Map<string, PhoneStorage>();
  private readonly mutex = new KeyedMutex();

  /**
   * @param onDevicePreKeyTaken called after one of a companion's one-time prekeys was consumed,
   *   with the number left (the sandbox sends a prekey-low notification when it is small).
   */
  constructor(
    private readonly store: Store,
    private readonly accounts: Accounts,
    private readonly onDevicePreKeyTaken: (pn: string, deviceId: number, remaining: number) => void,
  ) {}

  private storage(pn: string): PhoneStorage {
    let s = this.storages.get(pn);
    if (!s) {
      const account = this.accounts.get(pn);
      if (!account) throw new Error(`no account ${pn}`);
      s = new PhoneStorage(this.store, account);
      this.storages.set(pn, s);
    }
    return s;
  }

  /**
   * Encrypt `plaintext` (an already padded `proto.Message` encoding) from `senderPn`'s phone to a
   * companion. Opens a session from the companion's stored bundle first if none is open (one one-time
   * prekey consumed). The session update is queued: `await store.commit()` before sending the result.
   * @returns `pkmsg` for the first message(s) of a session, `msg` afterwards.
   */
  encryptToCompanion(
    senderPn: string,
    companion: DeviceRow,
    companionLid: string,
    plaintext: Uint8Array,
  ): Promise<{ type: EncType; ciphertext: Buffer }> {
    const storage = this.storage(senderPn);
    const addr = companionAddress(companionLid, companion.deviceId);
    return this.mutex.run(`${senderPn}|${addr.toString()}`, async () => {
      const record = await storage.loadSession(addr.toString());
      if (!record || !record.haveOpenSession()) {
        const preKey = this.store.takeDevicePreKey(companion.pn, companion.deviceId);
        if (preKey)
          this.onDevicePreKeyTaken(
            companion.pn,
            companion.deviceId,
            this.store.countDevicePreKeys(companion.pn, companion.deviceId),
          );
        await this.openSession(storage, addr, {
          registrationId: companion.registrationId,
          identityPub: companion.identityPub,
          signedPreKeyId: companion.signedPreKeyId,
          signedPreKeyPub: companion.signedPreKeyPub,
          signedPreKeySig: companion.signedPreKeySig,
          preKey,
        });
      }
      const { type, body } = await new SessionCipher(storage, addr).encrypt(Buffer.from(plaintext));
      return { type: type === 3 ? 'pkmsg' : 'msg', ciphertext: Buffer.from(body, 'binary') };
    });
  }

  /**
   * The registration id of the companion in `senderPn`'s open session with it (what a retry receipt's
   * `<registration>` is compared with); undefined without an open session.
   */
  sessionRegistrationId(senderPn: string, companionLid: string, deviceId: number): Promise<number | undefined> {
    const storage = this.storage(senderPn);
    const addr = companionAddress(companionLid, deviceId);
    return this.mutex.run(`${senderPn}|${addr.toString()}`, async () => {
      const record = (await storage.loadSession(addr.toString())) as OpenSessionView | undefined;
      return record?.getOpenSession()?.registrationId;
    });
  }

  /**
   * Forget `senderPn`'s session with a companion: the next {@link encryptToCompanion} opens a new one from the
   * companion's bundle on the server (a fresh `pkmsg`). Queued (durable after `store.commit()`).
   */
  dropSession(senderPn: string, companionLid: string, deviceId: number): Promise<void> {
    const addr = companionAddress(companionLid, deviceId);
    return this.mutex.run(`${senderPn}|${addr.toString()}`, async () =>
      this.store.deleteSession(senderPn, addr.toString()),
    );
  }

  /** Replace `senderPn`'s session with a companion by a fresh outgoing one built from `bundle` (retry receipts). */
  resetSession(senderPn: string, companionLid: string, deviceId: number, bundle: CompanionBundle): Promise<void> {
    const storage = this.storage(senderPn);
    const addr = companionAddress(companionLid, deviceId);
    return this.mutex.run(`${senderPn}|${addr.toString()}`, () => this.openSession(storage, addr, bundle));
  }

  private async openSession(storage: PhoneStorage, addr: ProtocolAddress, b: CompanionBundle): Promise<void> {
    const session: E2ESession = {
      registrationId: b.registrationId,
      identityKey: prefixed(b.identityPub),
      signedPreKey: {
        keyId: b.signedPreKeyId,
        publicKey: prefixed(b.signedPreKeyPub),
        signature: Buffer.from(b.signedPreKeySig),
      },
      // libsignal accepts an absent one-time prekey although its typings require one
      preKey: (b.preKey
        ? { keyId: b.preKey.keyId, publicKey: prefixed(b.preKey.pub) }
        : undefined) as E2ESession['preKey'],
    };
    await new SessionBuilder(storage, addr).initOutgoing(session);
  }

  /**
   * Decrypt a companion's `<enc>` addressed to `recipientPn`'s phone. Session/prekey updates are
   * queued (durable after `store.commit()`).
   * @returns the padded plaintext (strip with `unpadRandomMax16`).
   * @throws libsignal errors (no session, bad MAC, invalid prekey id, …).
   */
  decryptFromCompanion(
    recipientPn: string,
    senderLid: string,
    senderDevice: number,
    type: EncType,
    ciphertext: Uint8Array,
  ): Promise<Buffer> {
    const storage = this.storage(recipientPn);
    const addr = companionAddress(senderLid, senderDevice);
    const data = Buffer.from(ciphertext);
    return this.mutex.run(`${recipientPn}|${addr.toString()}`, () => {
      const cipher = new SessionCipher(storage, addr);
      return type === 'pkmsg' ? cipher.decryptPreKeyWhisperMessage(data) : cipher.decryptWhisperMessage(data);
    });
  }
}
