/**
 * Message kinds beyond the admin API's basic content (issue #13 item 8): polls, poll votes, live locations,
 * contact arrays and replies to list/buttons messages, built as a real phone sends them.
 * Field names follow WAProto (PollCreationMessage, PollUpdateMessage, LiveLocationMessage, ContactsArrayMessage,
 * ListResponseMessage, ButtonsResponseMessage); votes are encrypted like a phone's (engine/polls.ts
 * `encryptPollVote`, the inverse of Baileys' `decryptPollVote`).
 */
import { randomBytes } from 'node:crypto';
import { proto } from '@whiskeysockets/baileys';
import { encryptPollVote } from './poll-vote.ts';
import { buildVcard } from './content.ts';
import { formatPhoneNumber, parsePhoneNumber } from './phone-number.ts';

/** Admin-API body fields handled here (exactly one content field per message, like the basic ones). */
export const RICH_CONTENT_FIELDS = ['poll', 'liveLocation', 'contacts', 'listReply', 'buttonsReply'] as const;
export type RichContentField = (typeof RICH_CONTENT_FIELDS)[number];

/** A bad admin-API body; the message names the field. */
export class RichContentError extends Error {}

type Json = Record<string, unknown>;
const obj = (v: unknown, field: string): Json => {
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new RichContentError(`${field} must be an object`);
  return v as Json;
};
const str = (o: Json, key: string, field: string, max: number, optional = false): string | undefined => {
  const v = o[key];
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string' || v.length === 0 || v.length > max) throw new RichContentError(`${field}.${key} must be a string of 1-${max} characters`);
  return v;
};
const num = (o: Json, key: string, field: string, min: number, max: number): number => {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) throw new RichContentError(`${field}.${key} must be a number in [${min}, ${max}]`);
  return v;
};

/**
 * The proto.Message of a rich content field:
 * - `poll { name, options[2..12], selectableCount? (default 1) }` → pollCreationMessageV3 (single choice) or
 *   pollCreationMessage (multiple), with a fresh 32-byte messageSecret in messageContextInfo;
 * - `liveLocation { latitude, longitude, caption?, accuracyInMeters? }`;
 * - `contacts [{ name, phoneNumber }]` (2 or more) → contactsArrayMessage "<n> contacts";
 * - `listReply { id, title, description? }`, `buttonsReply { id, text }` (optionally quoting via contextInfo).
 */
export function buildRichContent(field: RichContentField, value: unknown, contextInfo?: proto.IContextInfo): proto.IMessage {
  const ci = contextInfo ? { contextInfo } : {};
  switch (field) {
    case 'poll': {
      const p = obj(value, 'poll');
      const name = str(p, 'name', 'poll', 255)!;
      const options = p.options;
      if (!Array.isArray(options) || options.length < 2 || options.length > 12 || options.some((o) => typeof o !== 'string' || !o)) {
        throw new RichContentError('poll.options must be 2 to 12 non-empty strings');
      }
      if (new Set(options).size !== options.length) throw new RichContentError('poll.options must be distinct');
      const selectableCount = p.selectableCount === undefined ? 1 : num(p, 'selectableCount', 'poll', 1, options.length);
      const creation = { name, options: (options as string[]).map((optionName) => ({ optionName })), selectableOptionsCount: selectableCount, ...ci };
      return {
        messageContextInfo: { messageSecret: randomBytes(32) },
        ...(selectableCount === 1 ? { pollCreationMessageV3: creation } : { pollCreationMessage: creation }),
      };
    }
    case 'liveLocation': {
      const l = obj(value, 'liveLocation');
      return {
        liveLocationMessage: {
          degreesLatitude: num(l, 'latitude', 'liveLocation', -90, 90),
          degreesLongitude: num(l, 'longitude', 'liveLocation', -180, 180),
          ...(l.caption !== undefined && { caption: str(l, 'caption', 'liveLocation', 1000) }),
          accuracyInMeters: l.accuracyInMeters === undefined ? 10 : num(l, 'accuracyInMeters', 'liveLocation', 0, 100_000),
          sequenceNumber: Date.now(),
          ...ci,
        },
      };
    }
    case 'contacts': {
      if (!Array.isArray(value) || value.length < 2 || value.length > 50) throw new RichContentError('contacts must be 2 to 50 cards');
      const cards = value.map((c, i) => {
        const o = obj(c, `contacts[${i}]`);
        const name = str(o, 'name', `contacts[${i}]`, 100)!;
        const pn = parsePhoneNumber(o.phoneNumber);
        if (!pn) throw new RichContentError(`contacts[${i}].phoneNumber must be an E.164 phone number`);
        return { displayName: name, vcard: buildVcard({ name, phoneNumber: formatPhoneNumber(pn) }) };
      });
      return { contactsArrayMessage: { displayName: `${cards.length} contacts`, contacts: cards, ...ci } };
    }
    case 'listReply': {
      const r = obj(value, 'listReply');
      return {
        listResponseMessage: {
          title: str(r, 'title', 'listReply', 255),
          listType: proto.Message.ListResponseMessage.ListType.SINGLE_SELECT,
          singleSelectReply: { selectedRowId: str(r, 'id', 'listReply', 255) },
          ...(r.description !== undefined && { description: str(r, 'description', 'listReply', 1000) }),
          ...ci,
        },
      };
    }
    case 'buttonsReply': {
      const r = obj(value, 'buttonsReply');
      return {
        buttonsResponseMessage: {
          selectedButtonId: str(r, 'id', 'buttonsReply', 255),
          selectedDisplayText: str(r, 'text', 'buttonsReply', 255),
          type: proto.Message.ButtonsResponseMessage.Type.DISPLAY_TEXT,
          ...ci,
        },
      };
    }
  }
}

/**
 * The pollUpdateMessage a phone sends to vote: `poll` is the stored poll creation message (its messageSecret
 * encrypts the vote), `creatorJid`/`voterJid` the JIDs of the poll's sender and of the voter (phone-number JIDs; in a
 * group as the group addresses its members), `chatJid` the chat as the voter sees it, `participantJid` the poll's
 * sender in the poll key of a group vote by someone else. `options` are option names of the poll ([] withdraws it).
 */
export function buildPollVote(
  poll: proto.IMessage,
  pollId: string,
  ctx: { creatorJid: string; voterJid: string; chatJid: string; creatorIsVoter: boolean; participantJid?: string },
  options: unknown,
): proto.IMessage {
  const creation = poll.pollCreationMessage ?? poll.pollCreationMessageV2 ?? poll.pollCreationMessageV3;
  const secret = poll.messageContextInfo?.messageSecret;
  if (!creation || !secret?.length) throw new RichContentError('pollId must be a poll in this conversation');
  const names = new Set((creation.options ?? []).map((o) => o.optionName ?? ''));
  if (!Array.isArray(options) || options.some((o) => typeof o !== 'string' || !names.has(o))) {
    throw new RichContentError(`options must be option names of the poll (${[...names].join(', ')})`);
  }
  const vote = encryptPollVote(options as string[], {
    pollCreatorJid: ctx.creatorJid,
    pollMsgId: pollId,
    pollEncKey: secret,
    voterJid: ctx.voterJid,
  });
  return {
    pollUpdateMessage: {
      pollCreationMessageKey: {
        remoteJid: ctx.chatJid,
        fromMe: ctx.creatorIsVoter,
        id: pollId,
        ...(ctx.participantJid && { participant: ctx.participantJid }),
      },
      vote,
      senderTimestampMs: Date.now(),
    },
  };
}
