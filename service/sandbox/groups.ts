/**
 * Groups in the sandbox, at protocol level (`groups-protocol.md`; client side in Baileys rc14
 * `lib/Socket/groups.js`, `lib/Socket/messages-send.js` relayMessage, `lib/Socket/messages-recv.js`
 * handleGroupNotification, `lib/Utils/decode-wa-message.js`).
 *
 * Owns:
 * - the group model (members and roles, subject, description, invite code and joining by it, addressing mode
 *   `pn` | `lid`) and the
 *   actions on it, shared by the `w:g2` IQs and the admin API, each followed by a `<notification type="w:gp2">`
 *   queued for every member's companions (delivered at once or at the next login, until acknowledged);
 * - phone → group: the phone's own sender key (created on first use, rotated when a member leaves or is
 *   removed), one `skmsg` per message, and per member companion an outbox row with the SKDM as a 1:1 `pkmsg`/`msg`
 *   for devices that do not have that key yet, then the `skmsg`;
 * - companion → group: the SKDMs addressed to simulated phones are decrypted and kept, the `skmsg` is decrypted
 *   by each member phone, recorded once with its recipients, and relayed (with each device's SKDM) to every other
 *   member companion; then `<ack>` and a delivery `<receipt participant>` per phone.
 *
 * JIDs follow the group's addressing mode: a `pn` group names members `<pn>@s.whatsapp.net` (with `lid`
 * alternates), a `lid` group `<lid>@lid` (with `phone_number` / `participant_pn` alternates).
 */
import { randomBytes, randomInt } from 'node:crypto';
import {
  encodeBinaryNode,
  getBinaryNodeChild,
  getBinaryNodeChildren,
  normalizeMessageContent,
  proto,
  unpadRandomMax16,
  writeRandomPadMax16,
  type BinaryNode,
} from '@whiskeysockets/baileys';
import { unixNow, type SandboxContext } from './context.ts';
import type { ClientConnection } from './session.ts';
import type { AccountRow, AddressingMode, GroupParticipantRow, GroupRole, GroupRow, NewOutbox } from './store.ts';
import { formatPhoneNumber, lidJid, memberJid, pnJid } from './phone-number.ts';
import { classify, stanzaAttrs } from './content.ts';
import { readFanout } from './fanout.ts';
import { mediaContent } from './media.ts';
import { newMessageId } from './message-id.ts';
import { SKIP_PAIRWISE_ATTR, type Sealed } from './delivery.ts';
import {
  SenderKeyError,
  createSenderKey,
  distributionMessage,
  groupDecrypt,
  groupEncrypt,
  processDistribution,
  type SenderKeyRecord,
} from './sender-keys.ts';

export type ParticipantAction = 'add' | 'remove' | 'promote' | 'demote';
export const PARTICIPANT_ACTIONS: readonly ParticipantAction[] = ['add', 'remove', 'promote', 'demote'];

/** A refused group action; `code` is the HTTP-like status the IQ error and the admin API use. */
export class GroupError extends Error {
  override name = 'GroupError';
  constructor(
    readonly code: 400 | 403 | 404 | 409,
    message: string,
  ) {
    super(message);
  }
}

/** `w:g2` error texts per code (what WhatsApp's server puts in `<error text>`). */
const IQ_ERROR_TEXT: Record<number, string> = {
  400: 'bad-request',
  403: 'forbidden',
  404: 'item-not-found',
  409: 'conflict',
};

export const MAX_SUBJECT = 100;
/** Longest disappearing-messages timer accepted (a year, in seconds). */
export const MAX_EPHEMERAL = 365 * 24 * 3600;
export const MAX_DESCRIPTION = 2048;

/** Protocol messages a phone records as messages (edits and revokes); others are device plumbing. */
const RECORDED_PROTOCOL_TYPES = new Set<number>([
  proto.Message.ProtocolMessage.Type.MESSAGE_EDIT,
  proto.Message.ProtocolMessage.Type.REVOKE,
]);

/** `<id>@g.us` */
export const groupJid = (id: string): string => `${id}@g.us`;

/** The group id (JID user part) from `120363…` or `120363…@g.us`; undefined when malformed. */
export function parseGroupId(input: unknown): string | undefined {
  if (typeof input !== 'string') return undefined;
  const id = input.endsWith('@g.us') ? input.slice(0, -'@g.us'.length) : input;
  return /^\d{5,24}(-\d{1,12})?$/.test(id) ? id : undefined;
}

/** 18 digits starting 120363, the shape of current group ids. */
function newGroupId(): string {
  let s = '120363';
  for (let i = 0; i < 12; i++) s += String(randomInt(0, 10));
  return s;
}

const newInviteCode = (): string => randomBytes(16).toString('base64url').slice(0, 22);

const isAdmin = (role: GroupRole | undefined): boolean => role === 'admin' || role === 'superadmin';

/** Attributes naming a sender/actor in the group's mode plus its alternate (`participant_pn`/`participant_lid`). */
function participantAttrs(mode: AddressingMode, account: AccountRow, device?: number): Record<string, string> {
  return mode === 'lid'
    ? { participant: lidJid(account.lid, device), participant_pn: pnJid(account.pn, device) }
    : { participant: pnJid(account.pn, device), participant_lid: lidJid(account.lid, device) };
}

/** The admin API's group shape. */
export interface GroupView {
  id: string;
  subject: string;
  description: string | null;
  owner: string;
  createdAt: number;
  addressingMode: AddressingMode;
  inviteCode: string;
  announce: boolean;
  locked: boolean;
  /** Disappearing-messages timer in seconds (0 = off). */
  ephemeral: number;
  participants: Array<{ phoneNumber: string; jid: string; lid: string; role: GroupRole; isAdmin: boolean }>;
}

export class Groups {
  /**
   * `w:g2` metadata queries (`<query request="interactive"/>`) answered per group and asking phone, since start (in
   * memory): clients that cache group metadata (Baileys' `cachedGroupMetadata`) ask once, not on every send.
   */
  readonly #metadataQueries = new Map<string, Map<string, number>>();
  /** Every `w:g2` IQ answered per asking phone and kind (the IQ's first child: query, participating, create…). */
  readonly #iqs = new Map<string, Map<string, number>>();

  constructor(private readonly ctx: SandboxContext) {}

  /** How many `w:g2` IQs the companions of `pn` sent since start, by kind (`query`, `participating`, `create`…). */
  iqCounts(pn: string): { total: number; byKind: Record<string, number> } {
    const byKind = Object.fromEntries(this.#iqs.get(pn) ?? []);
    return { total: Object.values(byKind).reduce((a, b) => a + b, 0), byKind };
  }

  /** How many metadata queries of `group` the sandbox answered (refusals included), in total and per phone. */
  metadataQueries(group: GroupRow): { total: number; byPhone: Record<string, number> } {
    const byPn = this.#metadataQueries.get(group.id) ?? new Map<string, number>();
    const byPhone: Record<string, number> = {};
    let total = 0;
    for (const [pn, n] of byPn) {
      byPhone[formatPhoneNumber(pn)] = n;
      total += n;
    }
    return { total, byPhone };
  }

  // ---- model --------------------------------------------------------------------------------

  get(id: string): GroupRow | undefined {
    return this.ctx.store.getGroup(id);
  }

  /** The group, or GroupError 404. */
  require(id: string): GroupRow {
    const g = this.get(id);
    if (!g) throw new GroupError(404, 'Group not found');
    return g;
  }

  private members(group: GroupRow): Array<GroupParticipantRow & { account: AccountRow }> {
    const out: Array<GroupParticipantRow & { account: AccountRow }> = [];
    for (const p of this.ctx.store.listGroupParticipants(group.id)) {
      const account = this.ctx.accounts.get(p.pn);
      if (account) out.push({ ...p, account });
    }
    return out;
  }

  private roleOf(group: GroupRow, pn: string): GroupRole | undefined {
    return this.ctx.store.listGroupParticipants(group.id).find((p) => p.pn === pn)?.role;
  }

  view(group: GroupRow): GroupView {
    return {
      id: groupJid(group.id),
      subject: group.subject,
      description: group.description,
      owner: formatPhoneNumber(group.creator),
      createdAt: group.createdAt,
      addressingMode: group.addressingMode,
      inviteCode: group.inviteCode,
      announce: group.announce,
      locked: group.locked,
      ephemeral: group.ephemeral,
      participants: this.members(group).map((m) => ({
        phoneNumber: formatPhoneNumber(m.pn),
        jid: pnJid(m.pn),
        lid: lidJid(m.account.lid),
        role: m.role,
        isAdmin: isAdmin(m.role),
      })),
    };
  }

  /** `<participant jid [type] [lid|phone_number]/>` in the group's mode. */
  private participantNode(mode: AddressingMode, account: AccountRow, role?: GroupRole): BinaryNode {
    const attrs: Record<string, string> =
      mode === 'lid'
        ? { jid: lidJid(account.lid), phone_number: pnJid(account.pn) }
        : { jid: pnJid(account.pn), lid: lidJid(account.lid) };
    if (role && role !== 'member') attrs.type = role;
    return { tag: 'participant', attrs };
  }

  /** The `<group …>` node Baileys' `extractGroupMetadata` reads (metadata answers, create, participating). */
  metadataNode(group: GroupRow): BinaryNode {
    const { accounts } = this.ctx;
    const mode = group.addressingMode;
    const members = this.members(group);
    const creator = accounts.get(group.creator);
    const subjectOwner = accounts.get(group.subjectOwner);
    const attrs: Record<string, string> = {
      id: group.id,
      subject: group.subject,
      s_t: String(group.subjectTs),
      creation: String(group.createdAt),
      size: String(members.length),
      addressing_mode: mode,
    };
    if (creator) {
      attrs.creator = memberJid(mode, creator);
      if (mode === 'lid') attrs.creator_pn = pnJid(creator.pn);
    }
    if (subjectOwner) {
      attrs.s_o = memberJid(mode, subjectOwner);
      if (mode === 'lid') attrs.s_o_pn = pnJid(subjectOwner.pn);
    }
    const content: BinaryNode[] = members.map((m) => this.participantNode(mode, m.account, m.role));
    if (group.description !== null && group.descriptionId) {
      const owner = group.descriptionOwner ? accounts.get(group.descriptionOwner) : undefined;
      const dattrs: Record<string, string> = { id: group.descriptionId, t: String(group.descriptionTs ?? 0) };
      if (owner) {
        dattrs.participant = memberJid(mode, owner);
        if (mode === 'lid') dattrs.participant_pn = pnJid(owner.pn);
      }
      content.push({
        tag: 'description',
        attrs: dattrs,
        content: [{ tag: 'body', attrs: {}, content: Buffer.from(group.description, 'utf8') }],
      });
    }
    if (group.announce) content.push({ tag: 'announcement', attrs: {} });
    if (group.locked) content.push({ tag: 'locked', attrs: {} });
    if (group.ephemeral > 0) content.push({ tag: 'ephemeral', attrs: { expiration: String(group.ephemeral) } });
    return { tag: 'group', attrs, content };
  }

  /**
   * Create a group: `creator` is its superadmin, `participants` members (the creator is left out if listed).
   * Members' companions get a `<create>` notification, unless `notify` is false: then they learn of the group only
   * from its first message, as a client does that missed the notification.
   */
  create(
    creator: AccountRow,
    subject: string,
    participants: AccountRow[],
    addressingMode: AddressingMode = 'pn',
    notify = true,
  ): GroupRow {
    const { store } = this.ctx;
    const now = Math.floor(Date.now() / 1000);
    let id = newGroupId();
    while (store.getGroup(id)) id = newGroupId();
    const group: GroupRow = {
      id,
      subject,
      subjectOwner: creator.pn,
      subjectTs: now,
      description: null,
      descriptionId: null,
      descriptionOwner: null,
      descriptionTs: null,
      creator: creator.pn,
      createdAt: now,
      addressingMode,
      inviteCode: newInviteCode(),
      announce: false,
      locked: false,
      ephemeral: 0,
    };
    const seen = new Set<string>([creator.pn]);
    const rows: Array<{ pn: string; role: GroupRole }> = [{ pn: creator.pn, role: 'superadmin' }];
    for (const p of participants) {
      if (seen.has(p.pn)) continue;
      seen.add(p.pn);
      rows.push({ pn: p.pn, role: 'member' });
    }
    store.insertGroup(group, rows);
    if (notify) this.notify(group, creator, { tag: 'create', attrs: {}, content: [this.metadataNode(group)] }, 'create');
    return group;
  }

  /**
   * Add/remove/promote/demote members on behalf of `actor` (must be an admin; 403 otherwise).
   * @returns one result per target: `200`, or `404` (not a member / unknown), `409` (already a member),
   *   `403` (cannot change the group's creator).
   */
  updateParticipants(
    group: GroupRow,
    actor: AccountRow,
    action: ParticipantAction,
    targets: Array<{ jid: string; account: AccountRow | undefined }>,
  ): Array<{ jid: string; account: AccountRow | undefined; status: number }> {
    const { store } = this.ctx;
    if (!isAdmin(this.roleOf(group, actor.pn))) throw new GroupError(403, 'Not a group admin');
    const now = Math.floor(Date.now() / 1000);
    const results: Array<{ jid: string; account: AccountRow | undefined; status: number }> = [];
    const changed: AccountRow[] = [];
    store.transaction(() => {
      for (const t of targets) {
        const a = t.account;
        const role = a ? this.roleOf(group, a.pn) : undefined;
        let status = 200;
        if (!a) status = 404;
        else if (action === 'add') {
          if (role) status = 409;
          else store.upsertGroupParticipant(group.id, a.pn, 'member', now);
        } else if (!role) status = 404;
        else if (a.pn === group.creator && action !== 'promote') status = 403;
        else if (action === 'remove') store.removeGroupParticipant(group.id, a.pn);
        else store.upsertGroupParticipant(group.id, a.pn, action === 'promote' ? 'admin' : 'member', now);
        results.push({ ...t, status });
        if (status === 200 && a) changed.push(a);
      }
    });
    if (action === 'remove' && changed.length) this.rotateKeys(group);
    if (changed.length) {
      const content = changed.map((a) => this.participantNode(group.addressingMode, a));
      this.notify(group, actor, { tag: action, attrs: {}, content }, action, action === 'remove' ? changed : []);
    }
    return results;
  }

  /** `account` leaves the group (404 if not a member); the remaining members' phones rotate their keys. */
  leave(group: GroupRow, account: AccountRow): void {
    const { store } = this.ctx;
    if (!store.removeGroupParticipant(group.id, account.pn)) throw new GroupError(404, 'Not a group member');
    this.rotateKeys(group);
    const node = { tag: 'leave', attrs: {}, content: [this.participantNode(group.addressingMode, account)] };
    this.notify(group, account, node, 'leave', [account]);
  }

  /** The phones start new sender keys for the group (a member left or was removed and must not read on). */
  private rotateKeys(group: GroupRow): void {
    this.ctx.store.rotateGroupSenderKeys(group.id);
    this.ctx.store
      .commit()
      .catch((err: unknown) => this.ctx.logger.error({ err, group: group.id }, 'could not persist a key rotation'));
  }

  /** 403 unless `actor` may edit the group's info: a member, and an admin when the group is locked. */
  private requireEditor(group: GroupRow, actor: AccountRow): void {
    const role = this.roleOf(group, actor.pn);
    if (!role) throw new GroupError(403, 'Not a group member');
    if (group.locked && !isAdmin(role)) throw new GroupError(403, 'Not a group admin');
  }

  /**
   * Change settings: `announce` (only admins send) and `locked` (only admins edit the info) need an admin;
   * `ephemeral` (disappearing-messages timer in seconds, 0 = off) any member of an unlocked group. One
   * notification per changed setting (`announcement`/`not_announcement`, `locked`/`unlocked`,
   * `ephemeral expiration`/`not_ephemeral`).
   */
  updateSettings(group: GroupRow, actor: AccountRow, change: { announce?: boolean; locked?: boolean; ephemeral?: number }): GroupRow {
    const role = this.roleOf(group, actor.pn);
    if (!role) throw new GroupError(403, 'Not a group member');
    if ((change.announce !== undefined || change.locked !== undefined) && !isAdmin(role)) {
      throw new GroupError(403, 'Not a group admin');
    }
    if (change.ephemeral !== undefined) this.requireEditor(group, actor);
    const next = {
      announce: change.announce ?? group.announce,
      locked: change.locked ?? group.locked,
      ephemeral: change.ephemeral ?? group.ephemeral,
    };
    this.ctx.store.setGroupSettings(group.id, next);
    const updated = { ...group, ...next };
    if (next.announce !== group.announce) {
      this.notify(updated, actor, { tag: next.announce ? 'announcement' : 'not_announcement', attrs: {} }, 'announce');
    }
    if (next.locked !== group.locked) {
      this.notify(updated, actor, { tag: next.locked ? 'locked' : 'unlocked', attrs: {} }, 'locked');
    }
    if (next.ephemeral !== group.ephemeral) {
      const node: BinaryNode =
        next.ephemeral > 0
          ? { tag: 'ephemeral', attrs: { expiration: String(next.ephemeral) } }
          : { tag: 'not_ephemeral', attrs: {} };
      this.notify(updated, actor, node, 'ephemeral');
    }
    return updated;
  }

  /** Change the subject (any member, or admins only when the group is locked). */
  setSubject(group: GroupRow, actor: AccountRow, subject: string): void {
    this.requireEditor(group, actor);
    const now = Math.floor(Date.now() / 1000);
    this.ctx.store.setGroupSubject(group.id, subject, actor.pn, now);
    const s_o = memberJid(group.addressingMode, actor);
    this.notify(group, actor, { tag: 'subject', attrs: { subject, s_o, s_t: String(now) } }, 'subject');
  }

  /** Change (or with null, delete) the description (any member, or admins only when the group is locked). */
  setDescription(group: GroupRow, actor: AccountRow, description: string | null, descriptionId?: string): void {
    this.requireEditor(group, actor);
    const now = Math.floor(Date.now() / 1000);
    const id = description === null ? null : (descriptionId ?? newMessageId());
    this.ctx.store.setGroupDescription(group.id, description, id, actor.pn, now);
    const node: BinaryNode =
      description === null
        ? { tag: 'description', attrs: { id: newMessageId(), delete: 'true' } }
        : {
            tag: 'description',
            attrs: { id: id! },
            content: [{ tag: 'body', attrs: {}, content: Buffer.from(description, 'utf8') }],
          };
    this.notify(group, actor, node, 'description');
  }

  /** The invite code (admins only); `revoke` makes a new one. */
  inviteCode(group: GroupRow, actor: AccountRow, revoke = false): string {
    if (!isAdmin(this.roleOf(group, actor.pn))) throw new GroupError(403, 'Not a group admin');
    if (!revoke) return group.inviteCode;
    const code = newInviteCode();
    this.ctx.store.setGroupInviteCode(group.id, code);
    return code;
  }

  /**
   * `account` joins the group whose current invite code is `code` (404 for an unknown or revoked code, 409 when
   * already a member); the members get an `<add>` notification with the joiner as actor.
   */
  joinByInvite(code: string, account: AccountRow): GroupRow {
    const { store } = this.ctx;
    const group = store.getGroupByInviteCode(code);
    if (!group) throw new GroupError(404, 'Invite code not found');
    if (this.roleOf(group, account.pn)) throw new GroupError(409, 'Already a group member');
    store.upsertGroupParticipant(group.id, account.pn, 'member', Math.floor(Date.now() / 1000));
    const node = { tag: 'add', attrs: {}, content: [this.participantNode(group.addressingMode, account)] };
    this.notify(group, account, node, 'invite');
    return group;
  }

  /**
   * Queue `<notification from="<id>@g.us" type="w:gp2" participant=actor …>child</notification>` for every
   * member's companions (and `extra` accounts', e.g. removed members): durable outbox rows, delivered like
   * messages (offline ones at their next login) and removed by the client's `<ack class="notification">`.
   * Not awaited by the callers; a failed commit is logged.
   */
  private notify(group: GroupRow, actor: AccountRow, child: BinaryNode, what: string, extra: AccountRow[] = []): void {
    const { store, logger } = this.ctx;
    const id = newMessageId();
    const attrs = {
      from: groupJid(group.id),
      type: 'w:gp2',
      t: unixNow(),
      ...participantAttrs(group.addressingMode, actor),
    };
    const encoded = encodeBinaryNode(child);
    const pns = new Set([...store.listGroupParticipants(group.id).map((p) => p.pn), ...extra.map((a) => a.pn)]);
    const rows: NewOutbox[] = [];
    for (const pn of pns) {
      for (const d of store.listDeliveryTargets(pn)) {
        if (!d.historySent) continue; // a device still to be synced learns the group from its history sync
        rows.push({
          pn,
          deviceId: d.deviceId,
          msgId: id,
          kind: 'notification',
          senderPn: null,
          attrs,
          plaintext: encoded,
          encType: null,
          ciphertext: null,
        });
      }
    }
    if (!rows.length) return;
    store.enqueue(() => store.insertOutboxNow(rows));
    store
      .commit()
      .then(() => {
        for (const r of rows) this.ctx.delivery.kick(r.pn, r.deviceId);
        logger.debug({ group: group.id, what, devices: rows.length }, 'group notification queued');
      })
      .catch((err: unknown) => logger.error({ err, group: group.id, what }, 'could not queue a group notification'));
  }

  // ---- sender keys of the phones --------------------------------------------------------------

  private loadRecord(pn: string, groupId: string, sender: string): SenderKeyRecord | undefined {
    const json = this.ctx.store.loadSenderKey(pn, groupId, sender);
    return json ? (JSON.parse(json) as SenderKeyRecord) : undefined;
  }

  private saveRecord(pn: string, groupId: string, sender: string, record: SenderKeyRecord): void {
    this.ctx.store.storeSenderKey(pn, groupId, sender, JSON.stringify(record));
  }

  // ---- phone → group ------------------------------------------------------------------------

  /**
   * `sender`'s phone sends `message` into `group` (it must be a member: 403). The message row, its recipients and
   * one outbox row per member companion (own companions included, as the phone's own message) are committed
   * before this resolves.
   */
  async sendFromPhone(
    sender: AccountRow,
    group: GroupRow,
    message: proto.IMessage,
    opts: { mediaPlaintext?: Buffer } = {},
  ): Promise<{ id: string; timestamp: number }> {
    const { store } = this.ctx;
    const members = this.members(group);
    const role = members.find((m) => m.pn === sender.pn)?.role;
    if (!role) throw new GroupError(403, 'Not a group member');
    if (group.announce && !isAdmin(role)) throw new GroupError(403, 'Only admins can send to this group');
    if (group.ephemeral > 0) message = ephemeralWrap(message, group.ephemeral);
    const id = newMessageId();
    const ts = Math.floor(Date.now() / 1000);
    const bytes = Buffer.from(proto.Message.encode(message).finish());
    const gjid = groupJid(group.id);

    // the phone's sending key: the SKDM names the iteration of this message, then the chain advances
    const record = this.loadRecord(sender.pn, group.id, '') ?? { states: [createSenderKey()] };
    const state = record.states[record.states.length - 1]!;
    const skdm = distributionMessage(state);
    const skmsg = groupEncrypt(state, writeRandomPadMax16(bytes));
    this.saveRecord(sender.pn, group.id, '', record);
    const skdmMessage = Buffer.from(
      proto.Message.encode({
        senderKeyDistributionMessage: { groupId: gjid, axolotlSenderKeyDistributionMessage: skdm },
      }).finish(),
    );
    const attrs: Record<string, string> = {
      ...stanzaAttrs(message),
      from: gjid,
      addressing_mode: group.addressingMode,
      ...participantAttrs(group.addressingMode, sender),
      t: String(ts),
      notify: sender.pushName,
    };
    // The SKDM for each device that lacks this key is encrypted once, here (the skmsg is the same bytes for all):
    // redeliveries send the same ciphertext. Who lacks it is decided again inside the transaction; a device found
    // lacking only there gets its SKDM sealed at delivery.
    const sealed = new Map<string, Sealed>();
    await Promise.all(
      members.flatMap((m) =>
        store
          .listDeliveryTargets(m.pn)
          .filter((d) => d.historySent && !store.senderKeySent(sender.pn, group.id, m.pn, d.deviceId))
          .map(async (d) => {
            const device = store.getDevice(m.pn, d.deviceId);
            const made = device && (await this.ctx.delivery.seal(sender.pn, device, skdmMessage));
            if (made) sealed.set(`${m.pn}:${d.deviceId}`, made);
          }),
      ),
    );
    const targets: Array<[string, number]> = [];
    store.enqueue(() => {
      store.insertGroupMessageNow(
        { msgId: id, fromPn: sender.pn, toPn: group.id, groupId: group.id, ts, text: classify(message).text, message: bytes },
        members.filter((m) => m.pn !== sender.pn).map((m) => m.pn),
      );
      if (opts.mediaPlaintext) store.putMessageMediaNow(sender.pn, id, opts.mediaPlaintext);
      const rows: NewOutbox[] = [];
      for (const m of members) {
        for (const d of store.listDeliveryTargets(m.pn)) {
          if (!d.historySent) continue;
          const fresh = store.markSenderKeySentNow(sender.pn, group.id, m.pn, d.deviceId);
          // an SKDM sealed for a device another send gave the key to meanwhile still goes along (harmless)
          const skdm = sealed.get(`${m.pn}:${d.deviceId}`);
          rows.push({
            pn: m.pn,
            deviceId: d.deviceId,
            msgId: id,
            kind: 'message',
            senderPn: sender.pn,
            attrs: fresh || skdm ? attrs : { ...attrs, [SKIP_PAIRWISE_ATTR]: '1' },
            plaintext: skdmMessage,
            encType: skdm?.encType ?? null,
            ciphertext: skdm?.ciphertext ?? null,
            skCiphertext: skmsg,
          });
        }
      }
      store.insertOutboxNow(rows);
      for (const r of rows) targets.push([r.pn, r.deviceId]);
    });
    await store.commit();
    for (const [pn, deviceId] of targets) this.ctx.delivery.kick(pn, deviceId);
    return { id, timestamp: ts };
  }

  /**
   * `senderPn`'s phone answers a companion's retry receipt for its group message `msgId` (in group `groupJid`) as a
   * sender re-sends a group message: encrypted again with its current sender key (a new skmsg) and that key's
   * distribution message, for the caller to seal for the device. Sender-key state is queued (durable after commit).
   * @returns undefined when the message or the group is not known (any more).
   */
  reencryptForRetry(senderPn: string, groupJid: string, msgId: string): { skdmMessage: Buffer; skmsg: Buffer } | undefined {
    const groupId = parseGroupId(groupJid);
    const row = this.ctx.store.getMessage(senderPn, msgId);
    if (!groupId || !row || row.groupId !== groupId || !this.ctx.store.getGroup(groupId)) return undefined;
    const record = this.loadRecord(senderPn, groupId, '') ?? { states: [createSenderKey()] };
    const state = record.states[record.states.length - 1]!;
    const skdm = distributionMessage(state);
    const skmsg = groupEncrypt(state, writeRandomPadMax16(row.message));
    this.saveRecord(senderPn, groupId, '', record);
    const skdmMessage = Buffer.from(
      proto.Message.encode({
        senderKeyDistributionMessage: { groupId: groupJid, axolotlSenderKeyDistributionMessage: skdm },
      }).finish(),
    );
    return { skdmMessage, skmsg };
  }

  // ---- companion → group --------------------------------------------------------------------

  /** A `<message to="<id>@g.us">` from a logged-in companion of `sender` (device `senderDevice`). */
  async onClientMessage(conn: ClientConnection, node: BinaryNode, sender: AccountRow, senderDevice: number): Promise<void> {
    const { store } = this.ctx;
    const id = node.attrs.id!;
    const to = node.attrs.to!;
    const ack = (error?: string): void =>
      this.ctx.messaging.ackMessage(conn, id, to, error);
    const groupId = parseGroupId(to);
    const group = groupId ? this.get(groupId) : undefined;
    if (!group) {
      ack('404');
      return;
    }
    const members = this.members(group);
    const role = members.find((m) => m.pn === sender.pn)?.role;
    if (!role || (group.announce && !isAdmin(role) && node.attrs.category !== 'peer')) {
      ack('403');
      return;
    }
    const skEnc = getBinaryNodeChildren(node, 'enc').find((e) => e.attrs.type === 'skmsg');
    const skmsg = skEnc?.content instanceof Uint8Array ? Buffer.from(skEnc.content) : undefined;
    const senderName = `${sender.pn}.${senderDevice}`;

    // SKDMs: the phones keep theirs, companions get theirs relayed
    const pairwise = await readFanout(
      this.ctx,
      node,
      sender,
      senderDevice,
      (phone, skdm) =>
        this.saveRecord(phone.pn, group.id, senderName, processDistribution(this.loadRecord(phone.pn, group.id, senderName), skdm)),
      (err, to) => conn.log.warn({ err, msgId: id, to }, 'phone could not take a sender key'),
    );

    // every member phone decrypts the skmsg with that sender's key
    let content: proto.Message | undefined;
    const decryptedBy: AccountRow[] = [];
    if (skmsg) {
      const verified = new Set<string>(); // the signature is checked once per signing key, not once per phone
      for (const m of members) {
        if (m.pn === sender.pn) continue;
        const rec = this.loadRecord(m.pn, group.id, senderName);
        try {
          const plain = groupDecrypt(rec, skmsg, verified);
          this.saveRecord(m.pn, group.id, senderName, rec!);
          content ??= proto.Message.decode(unpadRandomMax16(plain));
          decryptedBy.push(m.account);
        } catch (err) {
          const level = err instanceof SenderKeyError ? 'warn' : 'error';
          conn.log[level]({ err, msgId: id, phone: m.pn }, 'phone could not decrypt a group message');
          // e.g. the client's participant list was stale and this phone never got the sender key
          if (err instanceof SenderKeyError) {
            this.ctx.messaging.requestRetry(conn, node, m.account, memberJid(group.addressingMode, m.account));
          }
        }
      }
    }

    // relay to every other member companion: its SKDM (if it got one) and the skmsg
    const ts = Math.floor(Date.now() / 1000);
    const attrs: Record<string, string> = {
      from: groupJid(group.id),
      type: node.attrs.type ?? 'text',
      addressing_mode: group.addressingMode,
      ...participantAttrs(group.addressingMode, sender, senderDevice),
      t: String(ts),
      notify: sender.pushName,
    };
    if (node.attrs.edit) attrs.edit = node.attrs.edit;
    for (const [k, v] of Object.entries(skEnc?.attrs ?? {})) {
      if (k !== 'v' && k !== 'type') attrs[`enc:${k}`] = v;
    }
    const relays: NewOutbox[] = [];
    for (const m of members) {
      for (const d of store.listDeliveryTargets(m.pn)) {
        if (!d.historySent || (m.pn === sender.pn && d.deviceId === senderDevice)) continue;
        const pw = pairwise.get(`${m.pn}:${d.deviceId}`);
        if (!pw && !skmsg) continue;
        relays.push({
          pn: m.pn,
          deviceId: d.deviceId,
          msgId: id,
          kind: 'relay',
          senderPn: null,
          attrs,
          plaintext: null,
          encType: pw?.type ?? null,
          ciphertext: pw?.ciphertext ?? null,
          skCiphertext: skmsg ?? null,
        });
      }
    }

    const protocolType = normalizeMessageContent(content)?.protocolMessage?.type;
    const record =
      content &&
      node.attrs.category !== 'peer' &&
      (protocolType === null || protocolType === undefined || RECORDED_PROTOCOL_TYPES.has(protocolType));
    if (record && content) {
      const bytes = Buffer.from(proto.Message.encode(content).finish());
      let plaintext: Buffer | undefined;
      if (mediaContent(content)) {
        try {
          plaintext = await this.ctx.media.fetchMessageMedia(content);
        } catch (err) {
          conn.log.warn({ err, msgId: id }, "phones could not download/verify the companion's group media");
        }
      }
      const text = classify(content).text;
      const recipients = decryptedBy.map((a) => a.pn);
      store.enqueue(() => {
        store.insertGroupMessageNow(
          { msgId: id, fromPn: sender.pn, toPn: group.id, groupId: group.id, ts, text, message: bytes },
          recipients,
        );
        if (plaintext) store.putMessageMediaNow(sender.pn, id, plaintext);
      });
    }
    if (relays.length) store.enqueue(() => store.insertOutboxNow(relays));
    await store.commit(); // sender keys, what the phones received and the relays, before acknowledging
    for (const r of relays) this.ctx.delivery.kick(r.pn, r.deviceId);
    ack();
    for (const a of decryptedBy) {
      conn.send({
        tag: 'receipt',
        attrs: { id, from: groupJid(group.id), participant: memberJid(group.addressingMode, a), t: unixNow() },
      });
    }
    conn.log.debug({ msgId: id, group: group.id, relays: relays.length, phones: decryptedBy.length }, 'group message');
  }

  // ---- w:g2 IQs -----------------------------------------------------------------------------

  /** Answer one `xmlns="w:g2"` IQ from a logged-in companion (exactly one reply; refusals as `<error>`). */
  async handleIq(conn: ClientConnection, iq: BinaryNode): Promise<void> {
    try {
      conn.reply(iq, this.answerIq(conn, iq));
    } catch (err) {
      if (!(err instanceof GroupError)) throw err;
      conn.replyError(iq, String(err.code), IQ_ERROR_TEXT[err.code] ?? 'bad-request');
    }
  }

  private answerIq(conn: ClientConnection, iq: BinaryNode): BinaryNode[] | undefined {
    const { accounts } = this.ctx;
    const me = conn.pn !== undefined ? accounts.get(conn.pn) : undefined;
    if (!me) throw new GroupError(403, 'not logged in');
    const type = iq.attrs.type;
    const first = Array.isArray(iq.content) ? iq.content[0] : undefined;
    const child = first?.tag ?? '';
    const to = iq.attrs.to ?? '';
    const kinds = this.#iqs.get(me.pn) ?? new Map<string, number>();
    kinds.set(child || type || 'empty', (kinds.get(child || type || 'empty') ?? 0) + 1);
    this.#iqs.set(me.pn, kinds);

    if (to === '@g.us') {
      if (type === 'get' && child === 'participating') {
        const groups = this.ctx.store.listGroupsOf(me.pn).map((g) => this.metadataNode(g));
        return [{ tag: 'groups', attrs: {}, content: groups }];
      }
      if (type === 'set' && child === 'create' && first) {
        const subject = first.attrs.subject ?? '';
        if (!subject.trim() || subject.length > MAX_SUBJECT) throw new GroupError(400, 'bad subject');
        const members = getBinaryNodeChildren(first, 'participant')
          .map((p) => accounts.resolveJid(p.attrs.jid)?.account)
          .filter((a): a is AccountRow => !!a);
        const mode: AddressingMode = first.attrs.addressing_mode === 'lid' ? 'lid' : 'pn';
        return [this.metadataNode(this.create(me, subject, members, mode))];
      }
      // groupGetInviteInfo / groupAcceptInvite: `<invite code/>` get (metadata) or set (join)
      if (child === 'invite' && first?.attrs.code) {
        if (type === 'get') {
          const group = this.ctx.store.getGroupByInviteCode(first.attrs.code);
          if (!group) throw new GroupError(404, 'Invite code not found');
          return [this.metadataNode(group)];
        }
        const group = this.joinByInvite(first.attrs.code, me);
        return [{ tag: 'group', attrs: { jid: groupJid(group.id) } }];
      }
      if (type === 'set' && child === 'leave' && first) {
        const left: BinaryNode[] = [];
        for (const g of getBinaryNodeChildren(first, 'group')) {
          const group = this.require(parseGroupId(g.attrs.id) ?? '');
          this.leave(group, me);
          left.push({ tag: 'group', attrs: { id: groupJid(group.id) } });
        }
        return [{ tag: 'leave', attrs: {}, content: left }];
      }
      return undefined;
    }

    const group = this.require(parseGroupId(to) ?? '');
    if (type === 'get' && child === 'query') {
      const counts = this.#metadataQueries.get(group.id) ?? new Map<string, number>();
      counts.set(me.pn, (counts.get(me.pn) ?? 0) + 1);
      this.#metadataQueries.set(group.id, counts);
    }
    if (!this.roleOf(group, me.pn)) throw new GroupError(403, 'Not a group member');
    if (type === 'get' && child === 'query') return [this.metadataNode(group)];
    if (child === 'invite') {
      return [{ tag: 'invite', attrs: { code: this.inviteCode(group, me, type === 'set') } }];
    }
    if (type !== 'set' || !first) return undefined;
    if (child === 'subject') {
      const subject = nodeText(first);
      if (!subject.trim() || subject.length > MAX_SUBJECT) throw new GroupError(400, 'bad subject');
      this.setSubject(group, me, subject);
      return undefined;
    }
    if (child === 'description') {
      if (first.attrs.delete === 'true') {
        this.setDescription(group, me, null);
        return undefined;
      }
      const body = nodeText(getBinaryNodeChild(first, 'body'));
      if (body.length > MAX_DESCRIPTION) throw new GroupError(400, 'description too long');
      this.setDescription(group, me, body, first.attrs.id);
      return undefined;
    }
    if (child === 'announcement' || child === 'not_announcement') {
      this.updateSettings(group, me, { announce: child === 'announcement' });
      return undefined;
    }
    if (child === 'locked' || child === 'unlocked') {
      this.updateSettings(group, me, { locked: child === 'locked' });
      return undefined;
    }
    if (child === 'ephemeral' || child === 'not_ephemeral') {
      const expiration = child === 'ephemeral' ? Number(first.attrs.expiration) : 0;
      if (!Number.isInteger(expiration) || expiration < 0 || expiration > MAX_EPHEMERAL) {
        throw new GroupError(400, 'bad expiration');
      }
      this.updateSettings(group, me, { ephemeral: expiration });
      return undefined;
    }
    if ((PARTICIPANT_ACTIONS as readonly string[]).includes(child)) {
      const targets = getBinaryNodeChildren(first, 'participant').map((p) => ({
        jid: p.attrs.jid ?? '',
        account: accounts.resolveJid(p.attrs.jid)?.account,
      }));
      const results = this.updateParticipants(group, me, child as ParticipantAction, targets);
      return [
        {
          tag: child,
          attrs: {},
          content: results.map((r) => ({
            tag: 'participant',
            attrs: { jid: r.jid, ...(r.status === 200 ? {} : { error: String(r.status) }) },
          })),
        },
      ];
    }
    return undefined;
  }
}

/**
 * The message as a phone sends it in a chat with disappearing messages: the content's `contextInfo.expiration`
 * set and the whole wrapped in `ephemeralMessage` (a plain text becomes an `extendedTextMessage`). Protocol
 * messages (edits, revokes) and reactions go unwrapped.
 */
export function ephemeralWrap(message: proto.IMessage, expiration: number): proto.IMessage {
  if (message.protocolMessage || message.reactionMessage || message.ephemeralMessage) return message;
  const inner: Record<string, unknown> = { ...message };
  if (typeof inner.conversation === 'string') {
    inner.extendedTextMessage = { text: inner.conversation };
    delete inner.conversation;
  }
  for (const [key, value] of Object.entries(inner)) {
    if (key === 'messageContextInfo' || !value || typeof value !== 'object') continue;
    const content = value as { contextInfo?: proto.IContextInfo | null };
    inner[key] = { ...content, contextInfo: { ...content.contextInfo, expiration } };
    break;
  }
  return { ephemeralMessage: { message: inner as proto.IMessage } };
}

/** Text content of a node (string or UTF-8 bytes); '' when none. */
function nodeText(node: BinaryNode | undefined): string {
  const c = node?.content;
  if (typeof c === 'string') return c;
  if (c instanceof Uint8Array) return Buffer.from(c).toString('utf8');
  return '';
}
