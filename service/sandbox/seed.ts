/**
 * Demo data: the account a user pairs with (`+15550100` "Sandbox Phone") and two contacts with a short
 * chat history each, and the group "Sandbox Team" (the phone as its creator and superadmin, both contacts as
 * members, phone-number addressed) with a short history, so a freshly linked client sees conversations and a
 * group in its history sync.
 */
import { generateMessageIDV2, proto } from '@whiskeysockets/baileys';
import type { Accounts } from './accounts.ts';
import type { Store } from './store.ts';
import { pnJid } from './phone-number.ts';
import { randomBytes, randomInt } from 'node:crypto';

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

/** The demo group's subject. */
export const SEED_GROUP_SUBJECT = 'Sandbox Team';

/** [from, minutes ago, text] */
const GROUP_LINES: Array<[string, number, string]> = [
  [PHONE.pn, 3 * 60, 'Welcome to the Sandbox Team group 👋'],
  [ALICE.pn, 3 * 60 - 5, 'Hi all!'],
  [BOB.pn, 3 * 60 - 7, 'Hello! Good to have a group for testing.'],
  [ALICE.pn, 30, 'Standup moves to 10:30 tomorrow.'],
];

/**
 * Create the demo accounts and their chat history, only if the sandbox has no accounts yet (idempotent).
 * @returns whether anything was created.
 */
export function seedDemo(store: Store, accounts: Accounts): boolean {
  if (accounts.count() > 0) return false;
  for (const a of [PHONE, ALICE, BOB]) accounts.create(a.pn, a.pushName);
  const now = Math.floor(Date.now() / 1000);
  let groupId = '120363';
  for (let i = 0; i < 12; i++) groupId += String(randomInt(0, 10));
  const created = now - 3 * 60 * 60 - 60;
  store.insertGroup(
    {
      id: groupId,
      subject: SEED_GROUP_SUBJECT,
      subjectOwner: PHONE.pn,
      subjectTs: created,
      description: 'Where the sandbox contacts meet.',
      descriptionId: generateMessageIDV2(),
      descriptionOwner: PHONE.pn,
      descriptionTs: created,
      creator: PHONE.pn,
      createdAt: created,
      addressingMode: 'pn',
      inviteCode: randomBytes(16).toString('base64url').slice(0, 22),
    },
    [
      { pn: PHONE.pn, role: 'superadmin' },
      { pn: ALICE.pn, role: 'member' },
      { pn: BOB.pn, role: 'member' },
    ],
  );
  store.transaction(() => {
    for (const [from, minutesAgo, text] of GROUP_LINES) {
      store.insertGroupMessageNow(
        {
          msgId: generateMessageIDV2(pnJid(from)),
          fromPn: from,
          toPn: groupId,
          groupId,
          ts: now - minutesAgo * 60,
          text,
          message: Buffer.from(proto.Message.encode({ conversation: text }).finish()),
        },
        [PHONE.pn, ALICE.pn, BOB.pn].filter((pn) => pn !== from),
      );
    }
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
