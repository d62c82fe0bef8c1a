/**
 * `iq get usync` answers (brief §B6 step 1, pitfalls D2/D7; parsers in `lib/WAUSync/Protocols/*.js`).
 *
 * Owns: per queried user (by `jid` or by `<contact>+phone</contact>`): `devices` (device 0 plus every
 * linked companion with `key-index`, which Baileys requires for non-zero devices), `lid` (always for
 * PN users of sandbox accounts — a PN without LID makes the client's send fail with "All encryptions
 * failed"), `contact` (`in` for sandbox accounts, `out` otherwise) and `status` (the about text, profiles.ts).
 * Unknown numbers get an empty device list and no LID; other protocols get no child (the client then leaves them
 * undefined).
 */
import { getBinaryNodeChild, getBinaryNodeChildren, type BinaryNode } from '@whiskeysockets/baileys';
import type { SandboxContext } from './context.ts';
import type { ClientConnection } from './session.ts';
import type { AccountRow } from './store.ts';
import { lidJid, parsePhoneNumber, pnJid } from './phone-number.ts';

function contentString(node: BinaryNode | undefined): string | undefined {
  const c = node?.content;
  if (typeof c === 'string') return c;
  if (c instanceof Uint8Array) return Buffer.from(c).toString('utf8');
  return undefined;
}

/** Answer one usync query with a `<usync><list><user/>…</list></usync>` result. */
export function handleUsync(ctx: SandboxContext, conn: ClientConnection, iq: BinaryNode): void {
  const usync = getBinaryNodeChild(iq, 'usync');
  const query = getBinaryNodeChild(usync, 'query');
  const protocols = Array.isArray(query?.content) ? query.content.map((p) => p.tag) : [];
  const users: BinaryNode[] = [];

  for (const u of getBinaryNodeChildren(getBinaryNodeChild(usync, 'list'), 'user')) {
    let jid = u.attrs.jid;
    let account: AccountRow | undefined;
    let queriedByLid = false;
    if (jid) {
      const resolved = ctx.accounts.resolveJid(jid);
      account = resolved?.account;
      queriedByLid = resolved?.isLid ?? jid.endsWith('@lid');
      if (account) jid = queriedByLid ? lidJid(account.lid) : pnJid(account.pn);
    } else {
      const digits = parsePhoneNumber(contentString(getBinaryNodeChild(u, 'contact')));
      if (!digits) continue;
      jid = pnJid(digits);
      account = ctx.accounts.get(digits);
    }

    const children: BinaryNode[] = [];
    for (const protocol of protocols) {
      if (protocol === 'devices') {
        const devices: BinaryNode[] = [];
        if (account) {
          devices.push({ tag: 'device', attrs: { id: '0' } });
          for (const d of ctx.store.listDevices(account.pn)) {
            devices.push({ tag: 'device', attrs: { id: String(d.deviceId), 'key-index': String(d.keyIndex) } });
          }
        }
        children.push({ tag: 'devices', attrs: {}, content: [{ tag: 'device-list', attrs: {}, content: devices }] });
      } else if (protocol === 'lid') {
        if (account && !queriedByLid) children.push({ tag: 'lid', attrs: { val: lidJid(account.lid) } });
      } else if (protocol === 'contact') {
        children.push({ tag: 'contact', attrs: { type: account ? 'in' : 'out' } });
      } else if (protocol === 'status') {
        children.push(ctx.profiles.usyncStatusNode(account, conn.pn));
      }
    }
    users.push({ tag: 'user', attrs: { jid }, content: children });
  }

  conn.reply(iq, [
    {
      tag: 'usync',
      attrs: {
        sid: usync?.attrs.sid ?? '',
        mode: usync?.attrs.mode ?? 'query',
        context: usync?.attrs.context ?? 'interactive',
        last: 'true',
        index: '0',
      },
      content: [{ tag: 'list', attrs: {}, content: users }],
    },
  ]);
}
