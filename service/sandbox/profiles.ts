/**
 * Profiles of the sandbox accounts (issue 14 item 4), as WhatsApp's server keeps them: the about text ("status"),
 * the profile picture and the push name (the name itself lives on the account row, see accounts.ts and
 * app-state.ts for the companion's push-name patch).
 *
 * Protocol (Baileys rc14 lib/Socket/chats.js):
 * - `profilePictureUrl(jid, type)`: `<iq type="get" xmlns="w:profile:picture" target><picture type="image|preview"
 *   query="url"/></iq>` → `<picture id type url direct_path/>`, or `<error code="404" text="item-not-found"/>` when
 *   there is none and `401 not-authorized` when the owner blocked the asker (WhatsApp hides it then).
 * - `updateProfilePicture(ownJid, img)`: `<iq type="set" xmlns="w:profile:picture"><picture type="image">JPEG
 *   </picture></iq>` (no `target` for one's own picture; Baileys sends a 640×640 JPEG) → `<picture id/>`;
 *   `removeProfilePicture` is the same IQ without a child.
 * - `updateProfileStatus(text)`: `<iq type="set" xmlns="status"><status>UTF-8 text</status></iq>`.
 * - `fetchStatus(...jids)`: usync with the `status` protocol, answered per user `<status t>text</status>` (t = unix
 *   seconds it was set), or `<status code="401"/>` when hidden (lib/WAUSync/Protocols/USyncStatusProtocol.js).
 * - A picture change is announced to the owner's contacts' online companions as `<notification type="picture"
 *   from><set jid id/></notification>` (`<delete jid/>` on removal), which Baileys turns into `contacts.update`
 *   with `imgUrl: 'changed' | 'removed'` (lib/Socket/messages-recv.js).
 * Pictures are served by the media host (plain JPEG, no media encryption, like pps.whatsapp.net) from `media_blobs`;
 * a replaced picture's blobs are expired, so its old URL answers 404.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { getBinaryNodeChild, type BinaryNode } from '@whiskeysockets/baileys';
import type Database from 'better-sqlite3';
import sharp from 'sharp';
import type { SandboxContext } from './context.ts';
import { unixNow } from './context.ts';
import { formatPhoneNumber, lidJid, pnJid } from './phone-number.ts';
import type { ClientConnection } from './session.ts';
import type { AccountRow } from './store.ts';

/** `media_blobs.media_type` of profile pictures (served as image/jpeg). */
export const PROFILE_PICTURE_MEDIA_TYPE = 'profile-picture';
/** Longest about text (WhatsApp's limit is 139 characters). */
export const MAX_ABOUT = 139;
/** Side of the full picture and of the preview, in pixels (WhatsApp: 640 and 96). */
const PICTURE_SIZE = 640;
const PREVIEW_SIZE = 96;

interface ProfileSql {
  about: string | null;
  about_set_at: number | null;
  picture_id: string | null;
  picture_path: string | null;
  preview_path: string | null;
  picture_set_at: number | null;
}

/** A picture as the sandbox holds it. */
export interface PictureInfo {
  id: string;
  /** Blob key (path) of the full image and of the preview on the media host. */
  path: string;
  previewPath: string;
  /** Unix seconds. */
  setAt: number;
}

/** The admin API's profile view. */
export interface ProfileView {
  phoneNumber: string;
  jid: string;
  lid: string;
  pushName: string;
  about: string | null;
  /** Unix seconds the about was set, null when never. */
  aboutSetAt: number | null;
  picture: { id: string; url: string; previewUrl: string; size: number; sha256: string; setAt: number } | null;
}

/** A picture or about that cannot be stored (400 in the admin API, `bad-request` on the protocol). */
export class ProfileInputError extends Error {
  override name = 'ProfileInputError';
}

const isJpeg = (b: Buffer) => b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff;
const isPng = (b: Buffer) => b.length > 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

/** A WhatsApp-like picture path on the media host (`/v/t61.24694-24/<hex>.jpg?…`); blobs are keyed by the path part. */
function newPicturePath(): string {
  return `/v/t61.24694-24/${randomBytes(16).toString('hex')}_n.jpg`;
}

export class Profiles {
  readonly #get: Database.Statement<[string], ProfileSql>;
  readonly #ensure: Database.Statement<[string]>;
  readonly #setAbout: Database.Statement<[string | null, number, string]>;
  readonly #setPicture: Database.Statement<[string | null, string | null, string | null, number | null, string]>;

  constructor(private readonly ctx: SandboxContext) {
    const db = ctx.store.db;
    this.#get = db.prepare('SELECT about, about_set_at, picture_id, picture_path, preview_path, picture_set_at FROM profiles WHERE pn = ?');
    this.#ensure = db.prepare('INSERT OR IGNORE INTO profiles (pn) VALUES (?)');
    this.#setAbout = db.prepare('UPDATE profiles SET about = ?, about_set_at = ? WHERE pn = ?');
    this.#setPicture = db.prepare('UPDATE profiles SET picture_id = ?, picture_path = ?, preview_path = ?, picture_set_at = ? WHERE pn = ?');
  }

  /** The about text and when it was set (unix seconds); `text` null when never set. */
  about(pn: string): { text: string | null; setAt: number | null } {
    const r = this.#get.get(pn);
    return { text: r?.about ?? null, setAt: r?.about_set_at ?? null };
  }

  /** The current picture, if any. */
  picture(pn: string): PictureInfo | undefined {
    const r = this.#get.get(pn);
    if (!r?.picture_id || !r.picture_path || !r.preview_path) return undefined;
    return { id: r.picture_id, path: r.picture_path, previewPath: r.preview_path, setAt: r.picture_set_at ?? 0 };
  }

  /** Sets (or with null / "" clears) the about text. @throws ProfileInputError when longer than 139 characters. */
  setAbout(pn: string, text: string | null): void {
    const about = text === null || text === '' ? null : text;
    if (about !== null && [...about].length > MAX_ABOUT) throw new ProfileInputError(`about must be at most ${MAX_ABOUT} characters`);
    this.ctx.store.transaction(() => {
      this.#ensure.run(pn);
      this.#setAbout.run(about, Number(unixNow()), pn);
    });
  }

  /**
   * Sets the picture from JPEG or PNG bytes: a JPEG is kept byte for byte (as the server keeps what a client
   * uploads), a PNG is converted to JPEG; a 96×96 preview is made. Expires the previous picture's blobs and tells
   * the contacts' companions. @throws ProfileInputError for other or undecodable bytes.
   */
  async setPicture(account: AccountRow, bytes: Buffer): Promise<PictureInfo> {
    let full: Buffer;
    let preview: Buffer;
    try {
      if (!isJpeg(bytes) && !isPng(bytes)) throw new ProfileInputError('picture must be a JPEG or PNG image');
      full = isJpeg(bytes)
        ? bytes
        : await sharp(bytes).resize(PICTURE_SIZE, PICTURE_SIZE, { fit: 'cover', withoutEnlargement: true }).jpeg({ quality: 90 }).toBuffer();
      preview = await sharp(full).resize(PREVIEW_SIZE, PREVIEW_SIZE, { fit: 'cover' }).jpeg({ quality: 80 }).toBuffer();
    } catch (err) {
      if (err instanceof ProfileInputError) throw err;
      throw new ProfileInputError('picture could not be decoded');
    }
    const info: PictureInfo = {
      id: String(randomInt(1_000_000_000, 9_999_999_999)),
      path: newPicturePath(),
      previewPath: newPicturePath(),
      setAt: Number(unixNow()),
    };
    const { store } = this.ctx;
    store.transaction(() => {
      this.#expirePicture(account.pn);
      this.#ensure.run(account.pn);
      store.putBlobNow(info.path, PROFILE_PICTURE_MEDIA_TYPE, full);
      store.putBlobNow(info.previewPath, PROFILE_PICTURE_MEDIA_TYPE, preview);
      this.#setPicture.run(info.id, info.path, info.previewPath, info.setAt, account.pn);
    });
    this.#announce(account, { tag: 'set', attrs: { jid: pnJid(account.pn), id: info.id } });
    return info;
  }

  /** Removes the picture (its URLs answer 404 from now on). @returns whether there was one. */
  removePicture(account: AccountRow): boolean {
    const had = this.picture(account.pn) !== undefined;
    this.ctx.store.transaction(() => {
      this.#expirePicture(account.pn);
      this.#setPicture.run(null, null, null, null, account.pn);
    });
    if (had) this.#announce(account, { tag: 'delete', attrs: { jid: pnJid(account.pn) } });
    return had;
  }

  /** The admin API's view of an account's profile. */
  view(account: AccountRow): ProfileView {
    const about = this.about(account.pn);
    const picture = this.picture(account.pn);
    const body = picture ? this.ctx.store.getBlob(picture.path)?.body : undefined;
    const base = `https://${this.ctx.media.host}`;
    return {
      phoneNumber: formatPhoneNumber(account.pn),
      jid: pnJid(account.pn),
      lid: lidJid(account.lid),
      pushName: account.pushName,
      about: about.text,
      aboutSetAt: about.setAt,
      picture:
        picture && body
          ? {
              id: picture.id,
              url: base + picture.path,
              previewUrl: base + picture.previewPath,
              size: body.length,
              sha256: createHash('sha256').update(body).digest('hex'),
              setAt: picture.setAt,
            }
          : null,
    };
  }

  /** The picture's JPEG bytes (full size), if any. */
  pictureBytes(pn: string): Buffer | undefined {
    const picture = this.picture(pn);
    return (picture && this.ctx.store.getBlob(picture.path)?.body) ?? undefined;
  }

  // ---- protocol ---------------------------------------------------------------------------------

  /** `xmlns="w:profile:picture"` IQs of a logged-in companion (exactly one reply). */
  async handlePictureIq(conn: ClientConnection, iq: BinaryNode): Promise<void> {
    const pn = conn.pn;
    const account = pn !== undefined ? this.ctx.accounts.get(pn) : undefined;
    if (!account) return conn.replyError(iq, '401', 'not-authorized');
    if (iq.attrs.type === 'get') {
      const owner = this.ctx.accounts.resolveJid(iq.attrs.target)?.account;
      const picture = owner && this.picture(owner.pn);
      if (!owner || !picture) return conn.replyError(iq, '404', 'item-not-found');
      if (owner.pn !== account.pn && this.ctx.blocklist.blocks(owner.pn, account.pn)) return conn.replyError(iq, '401', 'not-authorized');
      const preview = getBinaryNodeChild(iq, 'picture')?.attrs.type === 'preview';
      const path = preview ? picture.previewPath : picture.path;
      return conn.reply(iq, [
        {
          tag: 'picture',
          attrs: { id: picture.id, type: preview ? 'preview' : 'image', url: `https://${this.ctx.media.host}${path}`, direct_path: path },
        },
      ]);
    }
    // set: one's own picture only (a group's picture, `target="<id>@g.us"`, is not simulated)
    if (iq.attrs.target && this.ctx.accounts.resolveJid(iq.attrs.target)?.account.pn !== account.pn) {
      return conn.replyError(iq, '501', 'feature-not-implemented');
    }
    const node = getBinaryNodeChild(iq, 'picture');
    if (!node) {
      this.removePicture(account);
      return conn.reply(iq);
    }
    if (!(node.content instanceof Uint8Array)) return conn.replyError(iq, '400', 'bad-request');
    try {
      const info = await this.setPicture(account, Buffer.from(node.content));
      return conn.reply(iq, [{ tag: 'picture', attrs: { id: info.id } }]);
    } catch (err) {
      if (!(err instanceof ProfileInputError)) throw err;
      conn.log.info({ err }, 'profile picture refused');
      return conn.replyError(iq, '400', 'bad-request');
    }
  }

  /** `xmlns="status"` IQs: `set` changes the companion's account's about text. */
  handleStatusIq(conn: ClientConnection, iq: BinaryNode): void {
    const pn = conn.pn;
    if (pn === undefined) return conn.replyError(iq, '401', 'not-authorized');
    if (iq.attrs.type !== 'set') return conn.reply(iq);
    const content = getBinaryNodeChild(iq, 'status')?.content;
    const text = content instanceof Uint8Array ? Buffer.from(content).toString('utf8') : typeof content === 'string' ? content : '';
    try {
      this.setAbout(pn, text);
    } catch (err) {
      if (!(err instanceof ProfileInputError)) throw err;
      return conn.replyError(iq, '400', 'bad-request');
    }
    return conn.reply(iq);
  }

  /** The usync `status` protocol's answer for `owner` as `viewerPn` sees it. */
  usyncStatusNode(owner: AccountRow | undefined, viewerPn: string | undefined): BinaryNode {
    if (!owner) return { tag: 'status', attrs: { t: '0' } };
    if (viewerPn !== undefined && owner.pn !== viewerPn && this.ctx.blocklist.blocks(owner.pn, viewerPn)) {
      return { tag: 'status', attrs: { code: '401', type: 'fail' } };
    }
    const about = this.about(owner.pn);
    return about.text === null
      ? { tag: 'status', attrs: { t: String(about.setAt ?? 0) } }
      : { tag: 'status', attrs: { t: String(about.setAt ?? 0) }, content: Buffer.from(about.text, 'utf8') };
  }

  /** Expires the blobs of `pn`'s current picture (inside the caller's transaction). */
  #expirePicture(pn: string): void {
    const old = this.picture(pn);
    if (!old) return;
    this.ctx.store.expireBlob(old.path);
    this.ctx.store.expireBlob(old.previewPath);
  }

  /**
   * `<notification type="picture" from=owner><set|delete/></notification>` to the online companions of the owner's
   * contacts (accounts it exchanged messages with or shares a group with) and its own other companions. Best effort.
   */
  #announce(owner: AccountRow, child: BinaryNode): void {
    const { store, delivery } = this.ctx;
    const pns = new Set<string>([owner.pn, ...store.listPeers(owner.pn)]);
    for (const g of store.listGroupsOf(owner.pn)) for (const p of store.listGroupParticipants(g.id)) pns.add(p.pn);
    for (const pn of pns) {
      delivery.sendToCompanions(pn, {
        tag: 'notification',
        attrs: { from: pnJid(owner.pn), type: 'picture', id: randomBytes(8).toString('hex').toUpperCase(), t: unixNow() },
        content: [child],
      });
    }
  }
}
