/**
 * Simulated WhatsApp accounts: a phone number, a stable LID, a push name and the primary device 0
 * ("the phone") with its own Signal identity, registration id, signed prekey and a pool of one-time
 * prekeys (each handed out once, replenished when low).
 *
 * Owns: account creation (key generation), lookups by PN/LID/JID, the phone prekey pool, and the
 * admin-API view of an account. Persistence goes through {@link Store}.
 */
import { randomInt } from 'node:crypto';
import { Curve, jidDecode, signedKeyPair } from '@whiskeysockets/baileys';
import type { AccountRow, PreKey, Store } from './store.ts';
import { formatPhoneNumber, lidJid, pnJid } from './phone-number.ts';

/** The admin API's account shape. */
export interface AccountView {
  phoneNumber: string;
  jid: string;
  lid: string;
  pushName: string;
}

export class AccountExistsError extends Error {
  override name = 'AccountExistsError';
}

const INITIAL_PREKEYS = 100;
const PREKEY_LOW_WATERMARK = 20;
const PREKEY_REFILL = 100;

function generatePreKeys(firstId: number, count: number): Array<{ keyId: number; pub: Buffer; priv: Buffer }> {
  const keys: Array<{ keyId: number; pub: Buffer; priv: Buffer }> = [];
  for (let i = 0; i < count; i++) {
    const kp = Curve.generateKeyPair();
    keys.push({ keyId: firstId + i, pub: Buffer.from(kp.public), priv: Buffer.from(kp.private) });
  }
  return keys;
}

/** 15 random digits, first non-zero (the shape of real LID users). */
function randomLidUser(): string {
  let s = String(randomInt(1, 10));
  for (let i = 0; i < 14; i++) s += String(randomInt(0, 10));
  return s;
}

export class Accounts {
  private readonly byPn = new Map<string, AccountRow>();
  private readonly pnByLid = new Map<string, string>();

  constructor(private readonly store: Store) {}

  /** All accounts, oldest first. */
  list(): AccountRow[] {
    return this.store.listAccounts();
  }

  count(): number {
    return this.store.countAccounts();
  }

  /**
   * Renames an account (its push name: what `notify` carries on its messages, history syncs and calls from now on).
   * Writes at once (an admin or IQ write, already serialized) and updates the cached row.
   */
  setPushName(pn: string, pushName: string): void {
    this.store.transaction(() => this.store.setAccountPushName(pn, pushName));
    const cached = this.byPn.get(pn);
    if (cached) cached.pushName = pushName;
  }

  /** Account by phone-number digits (cached; account rows' key material never changes). */
  get(pn: string): AccountRow | undefined {
    const cached = this.byPn.get(pn);
    if (cached) return cached;
    const row = this.store.getAccount(pn);
    if (row) this.remember(row);
    return row;
  }

  /** Account by LID user digits (cached). */
  getByLid(lidUser: string): AccountRow | undefined {
    const pn = this.pnByLid.get(lidUser);
    if (pn) return this.get(pn);
    const row = this.store.getAccountByLid(lidUser);
    if (row) this.remember(row);
    return row;
  }

  private remember(row: AccountRow): void {
    this.byPn.set(row.pn, row);
    this.pnByLid.set(row.lid, row.pn);
  }

  /**
   * Resolve a user or device JID (`<pn>[:dev]@s.whatsapp.net` or `<lid>[:dev]@lid`) to its account.
   * @returns the account and the JID's device (0 when absent), or undefined for unknown users/servers.
   */
  resolveJid(jid: string | undefined): { account: AccountRow; device: number; isLid: boolean } | undefined {
    const decoded = jidDecode(jid);
    if (!decoded?.user) return undefined;
    const device = decoded.device ?? 0;
    if (decoded.server === 's.whatsapp.net') {
      const account = this.get(decoded.user);
      return account && { account, device, isLid: false };
    }
    if (decoded.server === 'lid') {
      const account = this.getByLid(decoded.user);
      return account && { account, device, isLid: true };
    }
    return undefined;
  }

  /**
   * Create an account with fresh phone keys (identity, registration id, signed prekey #1, 100 prekeys).
   * @throws AccountExistsError if the phone number is taken.
   */
  create(pn: string, pushName: string): AccountRow {
    if (this.get(pn)) throw new AccountExistsError(`account ${pn} already exists`);
    let lid = randomLidUser();
    while (this.store.getAccountByLid(lid)) lid = randomLidUser();
    const identity = Curve.generateKeyPair();
    const spk = signedKeyPair(identity, 1);
    const row: AccountRow = {
      pn,
      lid,
      pushName,
      registrationId: randomInt(1, 16381),
      identityPub: Buffer.from(identity.public),
      identityPriv: Buffer.from(identity.private),
      signedPreKeyId: spk.keyId,
      signedPreKeyPub: Buffer.from(spk.keyPair.public),
      signedPreKeyPriv: Buffer.from(spk.keyPair.private),
      signedPreKeySig: Buffer.from(spk.signature),
      nextPreKeyId: INITIAL_PREKEYS + 1,
      nextDeviceId: 1,
      createdAt: Date.now(),
    };
    try {
      this.store.insertAccount(row, generatePreKeys(1, INITIAL_PREKEYS));
    } catch (err) {
      if (this.store.getAccount(pn)) throw new AccountExistsError(`account ${pn} already exists`);
      throw err;
    }
    this.remember(row);
    return row;
  }

  /**
   * Hand out one one-time prekey of `pn`'s phone for an `encrypt key` answer (brief §B6 step 2, pitfall D8:
   * each prekey is given out once). Refills the pool when it runs low.
   */
  takePhonePreKey(pn: string): PreKey | undefined {
    if (this.store.countPhonePreKeys(pn) < PREKEY_LOW_WATERMARK) {
      const account = this.store.getAccount(pn);
      if (account) {
        const keys = generatePreKeys(account.nextPreKeyId, PREKEY_REFILL);
        this.store.addPhonePreKeys(pn, keys, account.nextPreKeyId + PREKEY_REFILL);
      }
    }
    return this.store.takePhonePreKey(pn);
  }

  /** Admin-API view: `{ phoneNumber: '+<digits>', jid, lid, pushName }`. */
  view(a: AccountRow): AccountView {
    return { phoneNumber: formatPhoneNumber(a.pn), jid: pnJid(a.pn), lid: lidJid(a.lid), pushName: a.pushName };
  }
}
