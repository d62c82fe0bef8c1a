/**
 * The sandbox's sender-key cipher against Baileys rc14's own group cipher (`lib/Signal/Group`), both ways:
 * an SKDM + skmsg made here is decrypted by Baileys, and Baileys' are decrypted here (skipped and reused
 * iterations, wrong signature).
 */
import { describe, expect, it } from 'vitest';
import { BufferJSON } from '@whiskeysockets/baileys';
// Baileys' own implementation is the reference the sandbox must interoperate with
import {
  GroupCipher,
  GroupSessionBuilder,
  SenderKeyDistributionMessage,
  SenderKeyName,
  SenderKeyRecord,
} from '@whiskeysockets/baileys/lib/Signal/Group/index.js';
import { ProtocolAddress } from 'libsignal';
import {
  SenderKeyError,
  createSenderKey,
  distributionMessage,
  groupDecrypt,
  groupEncrypt,
  processDistribution,
  type SenderKeyRecord as SandboxRecord,
} from '../../service/sandbox/sender-keys.ts';

/** A Baileys sender-key store over a map, serialized as Baileys' auth-state stores do. */
function baileysStore() {
  const map = new Map<string, Buffer>();
  return {
    async loadSenderKey(name: { toString(): string }) {
      const v = map.get(name.toString());
      return v ? SenderKeyRecord.deserialize(v) : new SenderKeyRecord();
    },
    async storeSenderKey(name: { toString(): string }, record: { serialize(): unknown }) {
      map.set(name.toString(), Buffer.from(JSON.stringify(record.serialize(), BufferJSON.replacer)));
    },
  };
}

const GROUP = '120363000000000001@g.us';
const name = () => new SenderKeyName(GROUP, new ProtocolAddress('15550101', 0));

describe('sender keys (sandbox ↔ Baileys)', () => {
  it('Baileys decrypts what the sandbox encrypts, in and out of order', async () => {
    const store = baileysStore();
    const state = createSenderKey();
    const skdm = distributionMessage(state);
    await new GroupSessionBuilder(store).process(name(), new SenderKeyDistributionMessage(null, null, null, null, skdm));
    const m1 = groupEncrypt(state, Buffer.from('one'));
    const m2 = groupEncrypt(state, Buffer.from('two'));
    const m3 = groupEncrypt(state, Buffer.from('three'));
    const cipher = new GroupCipher(store, name());
    expect(Buffer.from(await cipher.decrypt(m1)).toString()).toBe('one');
    expect(Buffer.from(await cipher.decrypt(m3)).toString()).toBe('three');
    expect(Buffer.from(await cipher.decrypt(m2)).toString()).toBe('two');
    await expect(cipher.decrypt(m2)).rejects.toThrow();
  });

  it('the sandbox decrypts what Baileys encrypts, and refuses reuse and forged signatures', async () => {
    const store = baileysStore();
    const skdm = await new GroupSessionBuilder(store).create(name());
    let record: SandboxRecord | undefined = processDistribution(undefined, skdm.serialize());
    const cipher = new GroupCipher(store, name());
    const a = Buffer.from(await cipher.encrypt(Buffer.from('alpha')));
    const b = Buffer.from(await cipher.encrypt(Buffer.from('beta')));
    expect(groupDecrypt(record, b).toString()).toBe('beta');
    expect(groupDecrypt(record, a).toString()).toBe('alpha');
    expect(() => groupDecrypt(record, a)).toThrow(SenderKeyError);
    const forged = Buffer.from(await cipher.encrypt(Buffer.from('gamma')));
    forged[forged.length - 1]! ^= 1;
    expect(() => groupDecrypt(record, forged)).toThrow(/signature/);
    // a signing key verified for another skmsg does not vouch for this one: the set is per skmsg
    const fresh = new Set<string>();
    expect(() => groupDecrypt(record, forged, fresh)).toThrow(/signature/);
    expect(fresh.size).toBe(0);
    record = JSON.parse(JSON.stringify(record)) as SandboxRecord; // survives a JSON round trip (the store)
    const c = Buffer.from(await cipher.encrypt(Buffer.from('delta')));
    expect(groupDecrypt(record, c).toString()).toBe('delta');
    expect(() => groupDecrypt(undefined, c)).toThrow(/no sender key state/);
  });
});
