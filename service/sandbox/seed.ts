/**
 * Demo data: the account a user pairs with (`+15550100` "Sandbox Phone") and two contacts with a short
 * chat history each, so a freshly linked client sees conversations in its history sync.
 */
import { generateMessageIDV2, proto } from '@whiskeysockets/baileys';
import type { Accounts } from './accounts.ts';
import type { Store } from './store.ts';
import { pnJid } from './phone-number.ts';

const PHONE = { pn: '15550100', pushName: 'Sandbox Phone' };
const ALICE = { pn: '15550101', pushName: 'Alice Sandbox' };
const BOB = { pn: '15550102', pushName: 'Bob Sandbox' };

/** [from, to, minutes ago, text] */
type Line = [string, string, number, string];

const LINES: Line[] = [
  [ALICE.pn, PHONE.pn, 23 * 60, 'Hi! Is this the new sandbox number?'],
  [PHONE.pn, ALICE.pn, 23 * 60 - 4, "Yes, it's the Switchboard sandbox phone."],
  [ALICE.pn, PHONE.pn, 5 * 60, 'Great. Can you send me the meeting notes later?'],
  [PHONE.pn, ALICE.pn, 5 * 60 - 10, "Sure, I'll send them this afternoon."],
  [ALICE.pn, PHONE.pn, 5 * 60 - 12, 'Thanks! 🙏'],
  [PHONE.pn, BOB.pn, 20 * 60, 'Hey Bob, are we still on for tomorrow?'],
  [BOB.pn, PHONE.pn, 20 * 60 - 20, 'Yes! 10am at the usual place.'],
  [PHONE.pn, BOB.pn, 20 * 60 - 30, 'Perfect, see you there.'],
  [BOB.pn, PHONE.pn, 60, 'Can you bring the charger?'],
];

/**
 * Create the demo accounts and their chat history, only if the sandbox has no accounts yet (idempotent).
 * @returns whether anything was created.
 */
export function seedDemo(store: Store, accounts: Accounts): boolean {
  if (accounts.count() > 0) return false;
  for (const a of [PHONE, ALICE, BOB]) accounts.create(a.pn, a.pushName);
  const now = Math.floor(Date.now() / 1000);
  store.transaction(() => {
    for (const [from, to, minutesAgo, text] of LINES) {
      const message = Buffer.from(proto.Message.encode({ conversation: text }).finish());
      store.insertMessageNow({
        msgId: generateMessageIDV2(pnJid(from)),
        fromPn: from,
        toPn: to,
        ts: now - minutesAgo * 60,
        text,
        message,
      });
    }
  });
  return true;
}
