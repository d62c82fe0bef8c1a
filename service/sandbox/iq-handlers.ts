/**
 * Answers to every IQ the Baileys client sends (brief §B4 tables, pitfalls D1/D3): an unanswered IQ
 * costs the client `defaultQueryTimeoutMs` (60 s), so unknown ones get a bare `<iq type="result"/>`.
 *
 * Owns: prekey count/upload/digest/rotate and key-bundle fetches (`xmlns="encrypt"`), passive, ping,
 * abt props, blocklist, privacy (settings and tokens), media_conn, dirty bits, companion removal on logout, linking by
 * phone code (`link-code.ts`); usync is delegated to `usync.ts`, `w:g2` (groups) to `groups.ts`, app-state sync to
 * `app-state.ts`, profile pictures and about texts (`w:profile:picture`, `status`) to `profiles.ts`.
 */
import { getBinaryNodeChild, getBinaryNodeChildren, type BinaryNode } from '@whiskeysockets/baileys';
import type { SandboxContext } from './context.ts';
import type { ClientConnection } from './session.ts';
import type { PreKey } from './store.ts';
import { handleUsync } from './usync.ts';
import { handleBlocklistIq } from './blocklist.ts';
import { handleAppStateIq } from './app-state.ts';
import { bundleNodes } from './key-nodes.ts';
import { MEDIA_AUTH } from './media.ts';

function childBuffer(node: BinaryNode | undefined, tag: string): Buffer | undefined {
  const c = getBinaryNodeChild(node, tag)?.content;
  return c instanceof Uint8Array ? Buffer.from(c) : undefined;
}

function readUInt(buf: Buffer | undefined): number | undefined {
  return buf && buf.length >= 1 && buf.length <= 6 ? buf.readUIntBE(0, buf.length) : undefined;
}

/**
 * Dispatch one client IQ (`type` get/set) and send exactly one reply.
 * Never throws for protocol reasons; storage errors propagate to the connection's handler log.
 */
export async function handleIq(ctx: SandboxContext, conn: ClientConnection, iq: BinaryNode): Promise<void> {
  const xmlns = iq.attrs.xmlns ?? '';
  const type = iq.attrs.type ?? '';
  const first = Array.isArray(iq.content) ? iq.content[0] : undefined;
  const child = first?.tag ?? '';
  conn.log.debug({ xmlns, type, child, id: iq.attrs.id }, 'iq');

  switch (xmlns) {
    case 'encrypt':
      return handleEncrypt(ctx, conn, iq, type, child);
    case 'usync':
      return handleUsync(ctx, conn, iq);
    case 'w:g2':
      return ctx.groups.handleIq(conn, iq);
    case 'w:p':
    case 'passive':
    case 'urn:xmpp:whatsapp:dirty':
    case 'w:stats':
      return conn.reply(iq);
    case 'abt':
      return conn.reply(iq, [{ tag: 'props', attrs: { protocol: '1', hash: 'sandbox-props-1' } }]);
    case 'blocklist':
      return handleBlocklistIq(ctx, ctx.blocklist, conn, iq);
    case 'privacy':
      if (type === 'get' && child === 'privacy') {
        const names = ['last', 'online', 'profile', 'status', 'groupadd', 'readreceipts', 'calladd', 'messages'];
        return conn.reply(iq, [
          {
            tag: 'privacy',
            attrs: {},
            content: names.map((name) => ({ tag: 'category', attrs: { name, value: 'all' } })),
          },
        ]);
      }
      return conn.reply(iq);
    case 'w:sync:app:state':
      return handleAppStateIq(ctx, conn, iq);
    case 'w:m':
      return conn.reply(iq, [
        {
          tag: 'media_conn',
          attrs: { auth: MEDIA_AUTH, ttl: '3600', auth_ttl: '21600', max_buckets: '12' },
          content: [{ tag: 'host', attrs: { hostname: ctx.media.host, maxContentLengthBytes: '104857600' } }],
        },
      ]);
    case 'w:profile:picture':
      return ctx.profiles.handlePictureIq(conn, iq);
    case 'status':
      return ctx.profiles.handleStatusIq(conn, iq);
    case 'md':
      if (child === 'remove-companion-device' && first) return removeCompanion(ctx, conn, iq, first);
      if (child === 'link_code_companion_reg' && first) return ctx.linkCodes.onIq(conn, iq, first);
      return conn.reply(iq);
    default:
      return conn.reply(iq);
  }
}

/** `xmlns="encrypt"`: count, upload, digest, rotate, key (bundle fetch). Brief §B4 steps 1–4, §B6 step 2. */
async function handleEncrypt(
  ctx: SandboxContext,
  conn: ClientConnection,
  iq: BinaryNode,
  type: string,
  child: string,
): Promise<void> {
  const { store } = ctx;
  const pn = conn.pn;
  const deviceId = conn.deviceId;
  if (type === 'get' && child === 'key') return answerKeyBundles(ctx, conn, iq);
  if (pn === undefined || deviceId === undefined) return conn.reply(iq);

  if (type === 'get' && child === 'count') {
    return conn.reply(iq, [{ tag: 'count', attrs: { value: String(store.countDevicePreKeys(pn, deviceId)) } }]);
  }
  if (type === 'get' && child === 'digest') {
    return conn.reply(iq, [{ tag: 'digest', attrs: {} }]);
  }
  if (type === 'set' && child === 'rotate') {
    const skey = getBinaryNodeChild(getBinaryNodeChild(iq, 'rotate'), 'skey');
    const id = readUInt(childBuffer(skey, 'id'));
    const pub = childBuffer(skey, 'value');
    const sig = childBuffer(skey, 'signature');
    if (id === undefined || pub?.length !== 32 || sig?.length !== 64) return conn.replyError(iq, '400', 'bad-request');
    store.setDeviceSignedPreKey(pn, deviceId, id, pub, sig);
    return conn.reply(iq);
  }
  if (type === 'set' && getBinaryNodeChild(iq, 'registration')) {
    const registrationId = readUInt(childBuffer(iq, 'registration'));
    const identityPub = childBuffer(iq, 'identity');
    const skey = getBinaryNodeChild(iq, 'skey');
    const signedPreKeyId = readUInt(childBuffer(skey, 'id'));
    const signedPreKeyPub = childBuffer(skey, 'value');
    const signedPreKeySig = childBuffer(skey, 'signature');
    if (
      registrationId === undefined ||
      identityPub?.length !== 32 ||
      signedPreKeyId === undefined ||
      signedPreKeyPub?.length !== 32 ||
      signedPreKeySig?.length !== 64
    ) {
      return conn.replyError(iq, '400', 'bad-request');
    }
    const preKeys: PreKey[] = [];
    for (const k of getBinaryNodeChildren(getBinaryNodeChild(iq, 'list'), 'key')) {
      const keyId = readUInt(childBuffer(k, 'id'));
      const pub = childBuffer(k, 'value');
      if (keyId !== undefined && pub?.length === 32) preKeys.push({ keyId, pub });
    }
    store.saveDeviceBundle(pn, deviceId, {
      registrationId,
      identityPub,
      signedPreKeyId,
      signedPreKeyPub,
      signedPreKeySig,
      preKeys,
    });
    conn.log.debug({ count: preKeys.length }, 'stored companion prekey upload');
    conn.reply(iq);
    // not awaited: the client's next IQs (passive, digest) must not wait for the history/queue pump
    ctx.delivery.onBundleUploaded(conn).catch((err: unknown) => conn.log.error({ err }, 'post-upload delivery failed'));
    return;
  }
  return conn.reply(iq);
}

/**
 * `iq get encrypt <key><user jid [reason]/>…</key>`: one bundle per known user/device; one-time prekeys
 * are consumed (pitfall D8). Unknown users are left out (a `<user><error/>` would fail the whole fetch).
 */
function answerKeyBundles(ctx: SandboxContext, conn: ClientConnection, iq: BinaryNode): void {
  const { accounts, store } = ctx;
  const users: BinaryNode[] = [];
  for (const u of getBinaryNodeChildren(getBinaryNodeChild(iq, 'key'), 'user')) {
    const jid = u.attrs.jid;
    const resolved = accounts.resolveJid(jid);
    if (!jid || !resolved) continue;
    const { account, device } = resolved;
    if (device === 0) {
      const preKey = accounts.takePhonePreKey(account.pn);
      users.push({ tag: 'user', attrs: { jid }, content: bundleNodes(account, preKey) });
      continue;
    }
    const d = store.getDevice(account.pn, device);
    if (!d) continue;
    const preKey = store.takeDevicePreKey(account.pn, device);
    if (preKey) ctx.delivery.onDevicePreKeyTaken(account.pn, device, store.countDevicePreKeys(account.pn, device));
    users.push({ tag: 'user', attrs: { jid }, content: bundleNodes(d, preKey) });
  }
  conn.reply(iq, [{ tag: 'list', attrs: {}, content: users }]);
}

/** `iq set md <remove-companion-device jid reason/>` (sent by `logout()`): unlink that companion. */
function removeCompanion(ctx: SandboxContext, conn: ClientConnection, iq: BinaryNode, node: BinaryNode): void {
  const target = ctx.accounts.resolveJid(node.attrs.jid);
  conn.reply(iq);
  if (!target || target.account.pn !== conn.pn || target.device === 0) return;
  conn.log.info({ deviceId: target.device, reason: node.attrs.reason }, 'companion logged out');
  ctx.delivery.unlinkDevice(target.account, target.device, conn);
}
