/**
 * Profiles (issue 14 item 4): a contact's name, about text and picture, and the account's own push name, about and
 * picture, through Baileys rc14 (lib/Socket/chats.js):
 * - about: `fetchStatus(jid)` (a usync query with the `status` protocol) and `updateProfileStatus(text)`
 *   (`<iq xmlns="status" type="set">`);
 * - picture: `profilePictureUrl(jid, 'image')` (`<iq xmlns="w:profile:picture" type="get" target>`; 404
 *   `item-not-found` when there is none, 401 when hidden) then a download of that URL, and
 *   `updateProfilePicture(ownJid, jpeg)` (`type="set"`, a 640×640 JPEG);
 * - push name: `updateProfileName(name)`, an app-state patch (`critical_block`, `setting_pushName`) that needs the
 *   app-state key the phone shares after linking; a contact's push name arrives with its messages (`notify`).
 *
 * Cache: per connection and user, on disk in the connection's media folder: the picture as
 * `profile-<user>-<sha256 prefix>.<ext>` (served by the media proxy, `GET /connections/:id/media/:filename`, its URL
 * built like a message's media URL, db/media-url.ts) and the
 * answer in `.profile-<user>.json` (a dot file: the media proxy never serves it). An answer is reused for 24 h
 * (`refresh` asks again); a picture notification (`contacts.update` with `imgUrl`) makes it stale at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { jidDecode, jidNormalizedUser } from '@whiskeysockets/baileys';
import sharp from 'sharp';
import { request, type Dispatcher } from 'undici';
import type { Logger } from 'pino';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../config/private-dir.ts';
import type { Store } from '../db/store.ts';
import { badRequest, ServiceError } from '../errors.ts';
import { parseChatId, pnForLid } from './chat-id.ts';
import { sniffMimetype, type MediaStore } from './media-store.ts';
import { loadMedia, type PrepareOptions } from './outgoing.ts';
import type { Session } from './session.ts';

/** How long a fetched profile (about text and picture) is reused, in ms (24 h). */
export const PROFILE_TTL_MS = 24 * 60 * 60 * 1000;
/** Side of the picture uploaded as the account's own, in pixels (WhatsApp's full-size profile picture). */
export const PROFILE_PICTURE_SIZE = 640;
/** Longest push name WhatsApp accepts, in characters. */
export const MAX_PUSH_NAME = 25;
/** Longest about text WhatsApp accepts, in characters. */
export const MAX_ABOUT = 139;
/** Largest picture downloaded from WhatsApp's CDN (a 640×640 JPEG is ~100 KiB). */
const MAX_PICTURE_DOWNLOAD = 5 * 1024 * 1024;
const PICTURE_DOWNLOAD_TIMEOUT_MS = 30_000;
const PICTURE_TYPES: Record<string, string> = { 'image/jpeg': 'jpg', 'image/png': 'png', 'image/webp': 'webp' };

/** A contact's profile (`GET /connections/:id/contacts/:jid/profile`). */
export interface ContactProfile {
  /** Phone-number JID (a LID whose number is unknown stays a LID). */
  jid: string;
  /** The name this account knows the contact by: saved name, else push name; null when neither is known. */
  name: string | null;
  /** The name the contact set for itself (it comes with its messages); null until one arrived. */
  pushName: string | null;
  /** The contact's about text; null when it has none or hides it. */
  about: string | null;
  /** Media-proxy URL of the picture (`<public URL>/connections/:id/media/profile-…`, as message media); null when it has none or hides it. */
  pictureUrl: string | null;
}

/** The account's own profile (`GET/PATCH /connections/:id/me`, `PUT /connections/:id/me/picture`). */
export interface OwnProfile {
  /** The account's phone-number JID. */
  id: string;
  pushName: string;
  about: string | null;
  pictureUrl: string | null;
}

/** What the profile operations need of the engine. */
export interface ProfilesDeps {
  store: Store;
  logger: Logger;
  media: MediaStore;
  prepareOptions: PrepareOptions;
  /** For picture downloads in sandbox mode (trusts the sandbox media host's CA); WhatsApp's CDN otherwise. */
  dispatcher?: Dispatcher | undefined;
  now: () => number;
  /** The online session, for changes (409 not online, 507 while storage is down). */
  onlineSession(connectionId: string): Session;
  /** The online session, for reads (409 not online). */
  liveSession(connectionId: string): Session;
  /** The user a `:jid` names (engine.ts resolveUser): 400 for a malformed id, an unknown LID or a number not on WhatsApp. */
  resolveUser(session: Session, jid: string): Promise<{ jid: string; chatId: string }>;
}

export interface Profiles {
  /**
   * A contact's profile, from the 24 h cache or asked from WhatsApp (`refresh` always asks).
   * @throws ServiceError 400 not a user JID or international number (or not on WhatsApp), 409 not online, 502 the
   * queries failed.
   */
  contactProfile(connectionId: string, jid: string, opts?: { refresh?: boolean }): Promise<ContactProfile>;
  /** The account's own profile; about and picture are best effort (null when WhatsApp does not answer). 409 not online. */
  ownProfile(connectionId: string, opts?: { refresh?: boolean }): Promise<OwnProfile>;
  /** Changes the account's push name and/or about text. @throws 400 bad input, 409 not online, 502 refused. */
  updateOwnProfile(connectionId: string, input: { pushName?: string; about?: string }): Promise<OwnProfile>;
  /**
   * Sets the account's picture from a JPEG or PNG (`base64` or an `https://` `url`, fetched through the outbound
   * URL policy), cropped and resized to 640×640. @throws 400 not a JPEG/PNG or undecodable, 409, 502.
   */
  setOwnPicture(connectionId: string, input: { base64?: string; url?: string }): Promise<OwnProfile>;
  /** Baileys `contacts.update` of a session: a picture change or removal makes that contact's cached answer stale. */
  onContactsUpdate(session: Session, updates: Array<{ id?: string | null; imgUrl?: string | null }>): void;
}

/** What is cached for one user (the `.profile-<user>.json` file). */
interface CachedProfile {
  about: string | null;
  /** File name of the picture in the media folder, null when there is none. */
  picture: string | null;
  /** ms since the epoch; 0 = stale. */
  fetchedAt: number;
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The `<error code>` of a failed Baileys IQ (its Boom's `data`), e.g. 404 item-not-found, 401 not-authorized. */
function iqCode(err: unknown): number | undefined {
  const e = err as { isBoom?: boolean; data?: unknown; output?: { statusCode?: number } } | null;
  if (e?.isBoom !== true) return undefined;
  return typeof e.data === 'number' ? e.data : undefined;
}

/** The user part of a JID (`15550101` of `15550101:3@s.whatsapp.net`), safe for a file name. */
const userOf = (jid: string) => (jidDecode(jid)?.user ?? '').replace(/[^0-9A-Za-z_-]/g, '');

/** Checks that a path's `jid` names a user (PN JID, `@c.us`, LID or an international number); 400 otherwise. */
function parseUserJid(input: string): string {
  let parsed;
  try {
    parsed = parseChatId(input);
  } catch {
    throw badRequest('jid must be a user JID or a phone number in international format');
  }
  if (parsed.kind === 'jid' && (parsed.isGroup || !/@(s\.whatsapp\.net|lid)$/.test(parsed.jid))) {
    throw badRequest('jid must be a user JID or a phone number in international format (a group has no contact profile)');
  }
  return parsed.jid;
}

export function createProfiles(d: ProfilesDeps): Profiles {
  const { store, logger, media, now } = d;
  const inflight = new Map<string, Promise<CachedProfile>>();

  const cacheFile = (connectionId: string, user: string) => path.join(media.dir(connectionId), `.profile-${user}.json`);
  const pictureUrl = (connectionId: string, file: string | null) => (file && media.stat(connectionId, file) ? store.mediaUrls.of(connectionId, file) : null);

  async function readCache(connectionId: string, user: string): Promise<CachedProfile | undefined> {
    try {
      const parsed = JSON.parse(await fs.promises.readFile(cacheFile(connectionId, user), 'utf8')) as CachedProfile;
      return typeof parsed.fetchedAt === 'number' ? parsed : undefined;
    } catch {
      return undefined;
    }
  }

  async function writeCache(connectionId: string, user: string, entry: CachedProfile): Promise<void> {
    const file = cacheFile(connectionId, user);
    await fs.promises.mkdir(path.dirname(file), { recursive: true, mode: PRIVATE_DIR_MODE });
    const tmp = `${file}.${randomBytes(6).toString('hex')}.part`;
    await fs.promises.writeFile(tmp, JSON.stringify(entry), { mode: PRIVATE_FILE_MODE });
    await fs.promises.rename(tmp, file);
  }

  /** The bytes at a picture URL WhatsApp gave (https only, size-limited). @throws Error on any failure. */
  async function download(url: string): Promise<Buffer> {
    const parsed = new URL(url);
    if (parsed.protocol !== 'https:') throw new Error('picture URL is not https');
    const res = await request(parsed, {
      method: 'GET',
      headersTimeout: PICTURE_DOWNLOAD_TIMEOUT_MS,
      bodyTimeout: PICTURE_DOWNLOAD_TIMEOUT_MS,
      ...(d.dispatcher && { dispatcher: d.dispatcher }),
    });
    if (res.statusCode !== 200) {
      res.body.destroy();
      throw new Error(`picture download answered ${res.statusCode}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_PICTURE_DOWNLOAD) {
        res.body.destroy();
        throw new Error('picture is too large');
      }
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  }

  /**
   * Asks WhatsApp for `jid`'s about and picture and caches the answer. `lenient`: a failed query keeps what was
   * cached (or null) instead of throwing.
   */
  async function fetchProfile(session: Session, jid: string, previous: CachedProfile | undefined, lenient: boolean): Promise<CachedProfile> {
    const { connectionId } = session;
    const user = userOf(jid);
    const failed = (what: string, err: unknown) => {
      if (!lenient) throw new ServiceError(502, `The ${what} could not be read: ${errorText(err)}`);
      logger.info({ err, connectionId }, `own ${what} could not be read`);
    };
    let about: string | null = previous?.about ?? null;
    try {
      const [answer] = (await session.fetchStatus(jid)) ?? [];
      const status = (answer as { status?: { status?: string | null } } | undefined)?.status?.status;
      about = typeof status === 'string' && status !== '' ? status : null;
    } catch (err) {
      failed('about text', err);
    }
    let picture: string | null = previous?.picture ?? null;
    try {
      let url: string | undefined;
      try {
        url = await session.profilePictureUrl(jid);
      } catch (err) {
        const code = iqCode(err);
        if (code !== 404 && code !== 401) throw err;
      }
      if (!url) picture = null;
      else {
        const bytes = await download(url);
        const ext = PICTURE_TYPES[(await sniffMimetype(bytes)) ?? ''];
        if (!ext) throw new Error('the picture is not an image');
        picture = `profile-${user}-${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}.${ext}`;
        if (!media.stat(connectionId, picture)) {
          // A disk that takes no write only costs the picture (the answer says null), never the answer.
          await media.writeBuffer(connectionId, picture, bytes).catch((err: unknown) => {
            logger.warn({ err, connectionId }, 'could not store a profile picture');
          });
        }
      }
    } catch (err) {
      failed('profile picture', err);
    }
    const entry: CachedProfile = { about, picture, fetchedAt: now() };
    await writeCache(connectionId, user, entry).catch((err: unknown) => logger.warn({ err, connectionId }, 'could not cache a profile'));
    if (previous?.picture && previous.picture !== picture) await media.remove(connectionId, previous.picture).catch(() => undefined);
    return entry;
  }

  /** The cached answer for `jid` when fresh, else a new one (one query at a time per user). */
  async function profileOf(session: Session, jid: string, refresh: boolean, lenient: boolean): Promise<CachedProfile> {
    const user = userOf(jid);
    const key = `${session.connectionId}:${user}`;
    const running = inflight.get(key);
    if (running) return running;
    const cached = await readCache(session.connectionId, user);
    const fresh = cached && cached.fetchedAt > 0 && now() - cached.fetchedAt < PROFILE_TTL_MS;
    if (fresh && !refresh && (!cached.picture || media.stat(session.connectionId, cached.picture))) return cached;
    const job = fetchProfile(session, jid, cached, lenient).finally(() => inflight.delete(key));
    inflight.set(key, job);
    return job;
  }

  function own(session: Session): { jid: string; name: string } {
    const me = session.me;
    if (!me) throw new ServiceError(409, 'Connection is not online');
    return { jid: me.jid, name: me.name };
  }

  async function ownProfile(connectionId: string, refresh = false): Promise<OwnProfile> {
    const session = d.liveSession(connectionId);
    const me = own(session);
    const entry = await profileOf(session, me.jid, refresh, true);
    return { id: me.jid, pushName: session.me?.name ?? me.name, about: entry.about, pictureUrl: pictureUrl(connectionId, entry.picture) };
  }

  /** Marks `jid`'s cached answer stale (the next read asks WhatsApp). */
  async function markStale(connectionId: string, jid: string): Promise<void> {
    const user = userOf(jid);
    const cached = await readCache(connectionId, user);
    if (cached && cached.fetchedAt !== 0) await writeCache(connectionId, user, { ...cached, fetchedAt: 0 });
  }

  return {
    async contactProfile(connectionId, jidInput, opts = {}) {
      parseUserJid(jidInput);
      const session = d.liveSession(connectionId);
      // a number the connection does not know yet is checked with WhatsApp, a LID must be known (400 otherwise)
      const { chatId } = await d.resolveUser(session, jidInput);
      const me = own(session);
      const isMe = chatId === me.jid || chatId === session.me?.lid;
      const entry = await profileOf(session, chatId, opts.refresh === true, false);
      const contact = store.contacts.profileNames(connectionId, chatId);
      return {
        jid: chatId,
        name: isMe ? me.name || null : (contact?.name ?? contact?.pushName ?? null),
        pushName: isMe ? me.name || null : (contact?.pushName ?? null),
        about: entry.about,
        pictureUrl: pictureUrl(connectionId, entry.picture),
      };
    },

    ownProfile: (connectionId, opts = {}) => ownProfile(connectionId, opts.refresh === true),

    async updateOwnProfile(connectionId, input) {
      const pushName = input.pushName?.trim();
      if (pushName !== undefined && (pushName === '' || [...pushName].length > MAX_PUSH_NAME)) {
        throw badRequest(`body/pushName must be 1 to ${MAX_PUSH_NAME} characters`);
      }
      const about = input.about;
      if (about !== undefined && (about.trim() === '' || [...about].length > MAX_ABOUT)) {
        throw badRequest(`body/about must be 1 to ${MAX_ABOUT} characters`);
      }
      if (pushName === undefined && about === undefined) throw badRequest('body must have pushName or about');
      const session = d.onlineSession(connectionId);
      const me = own(session);
      if (pushName !== undefined && pushName !== me.name) {
        try {
          await session.setPushName(pushName);
        } catch (err) {
          throw new ServiceError(502, `The name could not be changed: ${errorText(err)}`);
        }
      }
      if (about !== undefined) {
        try {
          await session.setAbout(about);
        } catch (err) {
          throw new ServiceError(502, `The about text could not be changed: ${errorText(err)}`);
        }
        const user = userOf(me.jid);
        const cached = await readCache(connectionId, user);
        await writeCache(connectionId, user, { about, picture: cached?.picture ?? null, fetchedAt: cached?.fetchedAt ?? 0 }).catch((err: unknown) =>
          logger.warn({ err, connectionId }, 'could not cache a profile'),
        );
      }
      const profile = await ownProfile(connectionId);
      // Baileys applies its own patch (creds.me.name) before updateProfileName returns; say what was set either way.
      return pushName === undefined ? profile : { ...profile, pushName };
    },

    async setOwnPicture(connectionId, input) {
      if ((input.base64 === undefined) === (input.url === undefined)) throw badRequest('body must have exactly one of url or base64');
      // Fail fast before any download: the connection must be online.
      d.onlineSession(connectionId);
      let file;
      try {
        file = await loadMedia({ type: 'image', chatId: '', ...input }, d.prepareOptions);
      } catch (err) {
        // loadMedia's type checks are a send's (WebP accepted): say what a picture may be.
        if (err instanceof ServiceError && /^(the image data is|could not recognise the image format)/.test(err.message)) {
          const actual = /^the image data is ([^;\s]+)/.exec(err.message)?.[1];
          throw badRequest(`a profile picture must be a JPEG or PNG image${actual ? `, not ${actual}` : ''}`);
        }
        throw err;
      }
      const type = await sniffMimetype(file.data);
      if (type !== 'image/jpeg' && type !== 'image/png') {
        throw badRequest(`a profile picture must be a JPEG or PNG image${type ? `, not ${type}` : ''}`);
      }
      let jpeg: Buffer;
      try {
        jpeg = await sharp(file.data)
          .rotate()
          .resize(PROFILE_PICTURE_SIZE, PROFILE_PICTURE_SIZE, { fit: 'cover' })
          .jpeg({ quality: 90 })
          .toBuffer();
      } catch {
        throw badRequest('the profile picture could not be decoded');
      }
      const session = d.onlineSession(connectionId);
      own(session); // 409 before linking
      try {
        await session.setProfilePicture(jpeg, PROFILE_PICTURE_SIZE);
      } catch (err) {
        throw new ServiceError(502, `The profile picture could not be changed: ${errorText(err)}`);
      }
      return ownProfile(connectionId, true);
    },

    onContactsUpdate(session, updates) {
      for (const u of updates) {
        if (!u.id || !u.imgUrl) continue;
        const id = jidNormalizedUser(u.id);
        const pn = id.endsWith('@lid') ? (pnForLid(store, session.connectionId, id) ?? id) : id;
        void markStale(session.connectionId, pn).catch((err: unknown) =>
          logger.warn({ err, connectionId: session.connectionId }, 'could not mark a cached profile stale'),
        );
      }
    },
  };
}
