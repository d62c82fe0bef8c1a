/**
 * Block lists of the sandbox accounts (issue 14 item 5), as WhatsApp keeps them server-side.
 *
 * Protocol (Baileys rc14 lib/Socket/chats.js): `fetchBlocklist` sends `<iq xmlns="blocklist" type="get"/>` and reads
 * `<list><item jid/>…</list>`; `updateBlockStatus` sends `<iq xmlns="blocklist" type="set"><item action="block|unblock"
 * jid="<lid>@lid" pn_jid="<pn>@s.whatsapp.net"?/></iq>` (the LID always, the PN JID when blocking). The list is
 * answered with LID JIDs, as WhatsApp does since LID addressing. A blocked account's messages to the blocker are
 * refused (the admin send answers 403 `Blocked by the recipient`).
 */
import { getBinaryNodeChild, type BinaryNode } from '@whiskeysockets/baileys';
import type Database from 'better-sqlite3';
import type { SandboxContext } from './context.ts';
import type { ClientConnection } from './session.ts';
import { lidJid } from './phone-number.ts';

/** The `block_list` table (sandbox schema v5). */
export class Blocklist {
  readonly #list: Database.Statement<[string], { blocked_pn: string }>;
  readonly #has: Database.Statement<[string, string], { one: number }>;
  readonly #add: Database.Statement<[string, string, number]>;
  readonly #remove: Database.Statement<[string, string]>;

  constructor(db: Database.Database) {
    this.#list = db.prepare('SELECT blocked_pn FROM block_list WHERE pn = ? ORDER BY created_at, blocked_pn');
    this.#has = db.prepare('SELECT 1 AS one FROM block_list WHERE pn = ? AND blocked_pn = ?');
    this.#add = db.prepare('INSERT OR IGNORE INTO block_list (pn, blocked_pn, created_at) VALUES (?, ?, ?)');
    this.#remove = db.prepare('DELETE FROM block_list WHERE pn = ? AND blocked_pn = ?');
  }

  /** Phone numbers (digits) `pn` blocked, oldest first. */
  list(pn: string): string[] {
    return this.#list.all(pn).map((r) => r.blocked_pn);
  }

  /** Whether `pn` blocked `other`. */
  blocks(pn: string, other: string): boolean {
    return this.#has.get(pn, other) !== undefined;
  }

  set(pn: string, other: string, blocked: boolean): void {
    if (blocked) this.#add.run(pn, other, Date.now());
    else this.#remove.run(pn, other);
  }
}

/** The account (digits) a `jid` / `pn_jid` attribute names: `<digits>@s.whatsapp.net` or `<lid>@lid`. */
function accountPnOf(ctx: SandboxContext, jid: string | undefined): string | undefined {
  if (!jid) return undefined;
  const [userPart = '', server] = jid.split('@');
  const user = userPart.split(':')[0] ?? '';
  if (server === 'lid') return ctx.store.getAccountByLid(user)?.pn;
  if (server === 's.whatsapp.net') return ctx.store.getAccount(user)?.pn;
  return undefined;
}

/** Answers one `xmlns="blocklist"` IQ of a logged-in companion (exactly one reply). */
export function handleBlocklistIq(ctx: SandboxContext, blocklist: Blocklist, conn: ClientConnection, iq: BinaryNode): void {
  const pn = conn.pn;
  if (pn === undefined) return conn.replyError(iq, '401', 'not-authorized');
  if (iq.attrs.type === 'get') {
    const items = blocklist.list(pn).map((other) => {
      const account = ctx.store.getAccount(other);
      return { tag: 'item', attrs: { jid: account ? lidJid(account.lid) : `${other}@s.whatsapp.net` } };
    });
    return conn.reply(iq, [{ tag: 'list', attrs: {}, content: items }]);
  }
  const item = getBinaryNodeChild(iq, 'item');
  const action = item?.attrs.action;
  const other = accountPnOf(ctx, item?.attrs.jid) ?? accountPnOf(ctx, item?.attrs.pn_jid);
  if ((action !== 'block' && action !== 'unblock') || !other || other === pn) return conn.replyError(iq, '400', 'bad-request');
  blocklist.set(pn, other, action === 'block');
  return conn.reply(iq);
}
