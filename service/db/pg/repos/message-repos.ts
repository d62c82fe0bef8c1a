/**
 * The message side of the asynchronous storage interface (store-api.ts `Repos` extends MessageRepos): chats,
 * contacts, group metadata, messages and the search index, each `Async<>` of its SQLite twin — except two members
 * of messages that are not plain methods there: `rendered` (an object of page methods, each asynchronous here) and
 * `iterate` (a generator there, an async iterable here: sqlite-store.ts runs each of its steps as a repository call).
 * MESSAGE_REPO_FACTORIES builds them on PostgreSQL, MESSAGE_REPO_NAMES names them in the SQLite store.
 */
import type { chatsRepo } from '../../chats.ts';
import type { contactsRepo } from '../../contacts.ts';
import type { groupMetadataRepo } from '../../group-metadata.ts';
import { MediaUrls } from '../../media-url.ts';
import type { Message, messagesRepo } from '../../messages.ts';
import type { SearchIndex } from '../../search.ts';
import type { Async } from '../../store-api.ts';
import { pgChatsRepo } from './chats.ts';
import { pgContactsRepo } from './contacts.ts';
import { pgGroupMetadataRepo } from './group-metadata.ts';
import type { MessageScope } from './message-scope.ts';
import { pgMessagesRepo } from './messages.ts';
import { pgSearchIndex, type PgSearchIndex } from './search.ts';

type SyncMessages = ReturnType<typeof messagesRepo>;

/** messagesRepo, asynchronous (see the module comment). */
export type AsyncMessages = Async<Omit<SyncMessages, 'iterate'>> & {
  rendered: Async<SyncMessages['rendered']>;
  iterate(...args: Parameters<SyncMessages['iterate']>): AsyncIterable<Message>;
};

export interface MessageRepos {
  chats: Async<ReturnType<typeof chatsRepo>>;
  contacts: Async<ReturnType<typeof contactsRepo>>;
  /** The group metadata cache Baileys reads as cachedGroupMetadata. */
  groupMetadata: Async<ReturnType<typeof groupMetadataRepo>>;
  /** Messages with their edits, reactions and poll votes; keeps `search` and the chats' previews in step. */
  messages: AsyncMessages;
  /** The full-text index of messages (written by `messages`, read by the search routes). */
  search: Async<SearchIndex>;
}

/** A PostgreSQL media URL base shared by the scopes that do not bring one (the default `/api` base). */
const defaultUrls = new MediaUrls();

/** The PostgreSQL factory of each message-side repository (a key missing here fails to typecheck). */
export const MESSAGE_REPO_FACTORIES: { [K in keyof MessageRepos]: (scope: MessageScope) => MessageRepos[K] } = {
  chats: pgChatsRepo,
  contacts: pgContactsRepo,
  groupMetadata: pgGroupMetadataRepo,
  messages: (scope) => pgMessagesRepo(scope, scope.mediaUrls ?? defaultUrls),
  search: (scope): PgSearchIndex => pgSearchIndex(scope),
};

/** The message-side repositories by their name in the synchronous SQLite store. */
export const MESSAGE_REPO_NAMES: Record<keyof MessageRepos, true> = {
  chats: true,
  contacts: true,
  groupMetadata: true,
  messages: true,
  search: true,
};
