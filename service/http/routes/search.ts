/**
 * Full-text search and chat export (issue 15; docs/api.md "Search" and "Export"):
 * - `GET /connections/:id/search` and `GET /search` (every connection of the caller): hits with the Message
 *   record, a snippet with the matches marked «…», the chat's name (and `connectionId` across connections);
 * - `GET /connections/:id/chats/:chatId/export`: the chat oldest first as JSONL (one Message per line) or a
 *   self-contained HTML transcript, or with `media=true` a ZIP of the transcript and the media files. Streamed
 *   from a keyset iterator over the database; media not on disk is downloaded through the media path, or listed
 *   as missing (`media-missing.json`, and marked in the HTML). At most `maxExports` exports of a user at once
 *   (429 with `retry-after` past it, like large uploads: plugins/user-caps.ts).
 * Both read on the reader threads (db/reader.ts), never on this thread, which serves every other request.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Archiver, ArchiverError, ArchiverOptions } from 'archiver';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { Message } from '../../db/messages.ts';
import type { Reader } from '../../db/reader.ts';
import type { SearchFilters } from '../../db/search.ts';
import type { Repos } from '../../db/store-api.ts';
import type { AuthUser } from '../../auth/authenticate.ts';
import { badRequest } from '../../errors.ts';
import { canonicalChatIdIn, parseChatId } from '../../engine/chat-id.ts';
import type { ApiDeps } from '../deps.ts';
import { TRANSCRIPT_CSP } from '../plugins/hardening.ts';
import { PerUserSlots, tooManyExports } from '../plugins/user-caps.ts';
import { BinaryResponse, ErrorResponse, MessageSchema, Nullable } from '../schemas.ts';
import type { ApiPlugin } from '../type-provider.ts';

/** archiver 7's factory (CommonJS; @types/archiver 8 describes the class-based 8.x API, same instance methods). */
const createArchive = createRequire(import.meta.url)('archiver') as (format: 'zip', options?: ArchiverOptions) => Archiver;

const SearchQuery = Type.Object({
  q: Type.String({ description: 'Words, "phrases", prefix*, -exclusion (docs/api.md "Search")', maxLength: 500 }),
  chatId: Type.Optional(Type.String({ minLength: 1, description: 'A JID or a phone number in international format' })),
  senderJid: Type.Optional(Type.String({ minLength: 1 })),
  type: Type.Optional(Type.String({ minLength: 1, description: 'Message type (text, image, document, …)' })),
  kind: Type.Optional(Type.String({ minLength: 1, description: 'Message kind, where the store records one' })),
  fromMe: Type.Optional(Type.Boolean()),
  since: Type.Optional(Type.Integer({ minimum: 0, description: 'Unix seconds, inclusive' })),
  until: Type.Optional(Type.Integer({ minimum: 0, description: 'Unix seconds, inclusive' })),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
  before: Type.Optional(Type.String({ description: 'nextBefore of the previous page (same q, filters and order)' })),
  order: Type.Union([Type.Literal('recent'), Type.Literal('relevance')], { default: 'recent' }),
});
type SearchQueryT = Static<typeof SearchQuery>;

const SearchResult = Type.Object({
  message: MessageSchema,
  snippet: Type.String({ description: 'Matched text with the matches marked «…» and cuts marked …' }),
  chatName: Nullable(Type.String()),
});
const SearchResultAll = Type.Object({
  connectionId: Type.String(),
  message: MessageSchema,
  snippet: Type.String({ description: 'Matched text with the matches marked «…» and cuts marked …' }),
  chatName: Nullable(Type.String()),
});
const SearchPage = Type.Object({ results: Type.Array(SearchResult), nextBefore: Nullable(Type.String()) });
const SearchPageAll = Type.Object({ results: Type.Array(SearchResultAll), nextBefore: Nullable(Type.String()) });

/** Searches on a reader thread (db/reader.ts); only the chat id's canonical form is looked up here. */
async function runSearch(repos: Repos, reader: Reader, connectionIds: string[], query: SearchQueryT) {
  const filters: SearchFilters = { connectionIds };
  // One connection: its LID mapping applies; across connections the chat is matched as written (a LID stays a LID).
  if (query.chatId !== undefined) {
    filters.chatId = connectionIds.length === 1 ? await canonicalChatIdIn(repos, connectionIds[0]!, query.chatId) : parseChatId(query.chatId).jid;
  }
  if (query.senderJid !== undefined) filters.senderJid = query.senderJid;
  if (query.type !== undefined) filters.type = query.type;
  if (query.kind !== undefined) filters.kind = query.kind;
  if (query.fromMe !== undefined) filters.fromMe = query.fromMe;
  if (query.since !== undefined) filters.since = query.since;
  if (query.until !== undefined) filters.until = query.until;
  return reader.search(query.q, filters, {
    limit: query.limit,
    order: query.order,
    ...(query.before !== undefined && { before: query.before }),
  });
}

const ExportQuery = Type.Object({
  format: Type.Union([Type.Literal('jsonl'), Type.Literal('html')], { default: 'jsonl' }),
  media: Type.Boolean({ default: false, description: 'true: a ZIP with the transcript and the media files' }),
  since: Type.Optional(Type.Integer({ minimum: 0, description: 'Unix seconds, inclusive' })),
  until: Type.Optional(Type.Integer({ minimum: 0, description: 'Unix seconds, inclusive' })),
});

/** The export's declared answers besides its streams (typed loosely: the 200 answer is a stream, not a schema's JSON). */
const EXPORT_RESPONSES: Record<number, TSchema> = {
  429: ErrorResponse('Too many exports in progress for this user (`--max-exports-per-user`, 2 by default), or the rate limit; see `retry-after`'),
};

/** HTML-escapes text for element content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

const HTML_STYLE = `body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#efeae2;margin:0;color:#111b21}
header{background:#075e54;color:#fff;padding:14px 20px}header h1{margin:0;font-size:18px}header p{margin:4px 0 0;opacity:.85;font-size:13px}
main{max-width:820px;margin:0 auto;padding:16px}.day{text-align:center;margin:14px 0 8px}.day span{background:#e1f2fb;border-radius:8px;padding:3px 10px;font-size:12px;color:#54656f}
.m{max-width:75%;margin:4px 0;padding:6px 9px 4px;border-radius:8px;background:#fff;box-shadow:0 1px .5px rgba(0,0,0,.13);clear:both;float:left;white-space:pre-wrap;overflow-wrap:anywhere}
.m.me{background:#d9fdd3;float:right}.who{font-size:12.5px;font-weight:600;color:#1f7aad}.meta{font-size:11px;color:#667781;text-align:right;margin-top:2px}
.media{font-size:13px;color:#54656f;font-style:italic}.revoked{color:#8696a0;font-style:italic}.row::after{content:"";display:block;clear:both}
footer{text-align:center;color:#667781;font-size:12px;padding:20px}`;

/** The HTML transcript of a chat, piece by piece (a generator: the page is streamed as the messages are read). */
async function* htmlTranscript(
  title: string,
  subtitle: string,
  messages: AsyncIterable<Message>,
  mediaRef?: (m: Message) => { href?: string; missing: boolean } | undefined,
): AsyncGenerator<string> {
  yield `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeHtml(title)}</title><style>${HTML_STYLE}</style></head><body>\n` +
    `<header><h1>${escapeHtml(title)}</h1><p>${escapeHtml(subtitle)}</p></header><main>\n`;
  let day = '';
  let count = 0;
  for await (const m of messages) {
    const at = new Date(m.timestamp * 1000);
    const d = at.toISOString().slice(0, 10);
    if (d !== day) {
      day = d;
      yield `<div class="day"><span>${d}</span></div>\n`;
    }
    const who = m.fromMe ? 'You' : m.senderPushName || m.senderJid.split('@')[0]!;
    let media = '';
    if (m.media) {
      const ref = mediaRef?.(m);
      const label = `${m.type}${m.media.filename ? `: ${m.media.filename}` : ''}`;
      // data-media-url: the Message's media.url (fetched with the Authorization header, so not a link).
      const open = `<div class="media" data-media-url="${escapeHtml(m.media.url)}">`;
      media = ref?.href
        ? `${open}<a href="${escapeHtml(ref.href)}">${escapeHtml(label)}</a></div>`
        : `${open}[${escapeHtml(label)}${ref?.missing ? ' (not available)' : ''}]</div>`;
    }
    const text = m.kind === 'revoked' ? '<span class="revoked">This message was deleted</span>' : escapeHtml(m.text);
    const edited = m.editedAt ? ' · edited' : '';
    yield `<div class="row"><div class="m${m.fromMe ? ' me' : ''}" id="${escapeHtml(m.id)}"><div class="who">${escapeHtml(who)}</div>` +
      `${media}${text}<div class="meta">${at.toISOString().slice(11, 16)} UTC${edited}</div></div></div>\n`;
    count++;
  }
  yield `</main><footer>${count} message${count === 1 ? '' : 's'} · exported by Switchboard</footer></body></html>\n`;
}

/** Readable of text pieces, pulled as the consumer reads (no buffering of the whole chat). */
function textStream(pieces: AsyncIterable<string>): Readable {
  return Readable.from(pieces, { objectMode: false });
}

/** A file name for a Content-Disposition header: the chat's digits/letters only. */
function exportName(chatId: string, ext: string): string {
  return `chat-${chatId.replace(/[^0-9A-Za-z._-]/g, '_')}.${ext}`;
}

export interface SearchRouteOptions extends ApiDeps {
  /** Where searches and exports read (db/reader.ts). */
  reader: Reader;
  /** Chat exports in progress at once per user (`--max-exports-per-user`); 0 = no cap. */
  maxExports: number;
}

export const searchRoutes: ApiPlugin<SearchRouteOptions> = async (api, { asyncStore, engine, reader, maxExports }) => {
  const store = asyncStore.read;
  api.get(
    '/connections/:id/search',
    { schema: { params: Type.Object({ id: Type.String() }), querystring: SearchQuery, response: { 200: SearchPage } } },
    async (request) => {
      const c = request.connection;
      return runSearch(store, reader, [c.id], request.query);
    },
  );

  api.get('/search', { schema: { querystring: SearchQuery, response: { 200: SearchPageAll } } }, async (request) => {
    const user: AuthUser = request.user;
    return runSearch(
      store,
      reader,
      (await store.connections.listByUser(user.id)).map((c) => c.id),
      request.query,
    );
  });

  const exports = new PerUserSlots();

  api.get(
    '/connections/:id/chats/:chatId/export',
    {
      schema: {
        params: Type.Object({ id: Type.String(), chatId: Type.String() }),
        querystring: ExportQuery,
        response: {
          200: BinaryResponse('The chat, oldest first, as a download (`Content-Disposition: attachment`)', [
            'application/x-ndjson',
            'text/html',
            'application/zip',
          ]),
          ...EXPORT_RESPONSES,
        },
        description:
          'Streams the chat oldest first: `format=jsonl` → `application/x-ndjson`, one Message per line; `format=html` → ' +
          'a self-contained `text/html` transcript; `media=true` → `application/zip` with `transcript.jsonl|html`, ' +
          '`media/<file>` and `media-missing.json`. A user runs at most `--max-exports-per-user` exports at once (429 past it).',
      },
    },
    async (request, reply) => {
      const c = request.connection;
      const chatId = await canonicalChatIdIn(store, c.id, request.params.chatId);
      const { format, media, since, until } = request.query;
      if (since !== undefined && until !== undefined && since > until) throw badRequest('since is after until');
      // One slot per export in progress, from here until its response is closed (finished, or the client went away).
      const release = exports.tryAcquire(request.user.id, maxExports);
      if (!release) {
        reply.header('retry-after', '1');
        throw tooManyExports(maxExports);
      }
      reply.raw.once('close', release);
      const range = { ...(since !== undefined && { since }), ...(until !== undefined && { until }) };
      const chatName = (await store.search.chatName(c.id, chatId)) ?? chatId;
      const subtitle = `${chatId} · exported ${new Date().toISOString().replace('T', ' ').slice(0, 16)} UTC`;
      reply.header('cache-control', 'private, no-store');

      if (!media) {
        if (format === 'jsonl') {
          return reply
            .header('content-type', 'application/x-ndjson; charset=utf-8')
            .header('content-disposition', `attachment; filename="${exportName(chatId, 'jsonl')}"`)
            .send(textStream(reader.jsonl(c.id, chatId, range)));
        }
        return reply
          .header('content-type', 'text/html; charset=utf-8')
          .header('content-disposition', `attachment; filename="${exportName(chatId, 'html')}"`)
          .header('content-security-policy', TRANSCRIPT_CSP)
          .send(textStream(htmlTranscript(chatName, subtitle, reader.messages(c.id, chatId, range))));
      }

      // ZIP: first the media files (fetched one by one, downloaded when not on disk), then the transcript,
      // which links them. Only the names of media files are kept in memory, not the messages.
      const archive = createArchive('zip', { zlib: { level: 6 } });
      const files = new Map<string, string>();
      const missing: string[] = [];
      archive.on('warning', (err: ArchiverError) => request.log.warn({ err }, 'chat export: archive warning'));
      archive.on('error', (err: ArchiverError) => request.log.error({ err }, 'chat export: archive failed'));
      const fill = async () => {
        for await (const m of reader.messages(c.id, chatId, range)) {
          if (!m.media) continue;
          try {
            const file = await engine.messageMedia(c.id, m.id);
            const name = `media/${path.basename(file.path)}`;
            files.set(m.id, name);
            archive.file(file.path, { name, date: new Date(m.timestamp * 1000) });
          } catch {
            missing.push(m.id);
          }
        }
        if (format === 'jsonl') archive.append(textStream(reader.jsonl(c.id, chatId, range)), { name: 'transcript.jsonl' });
        else {
          archive.append(
            textStream(
              htmlTranscript(chatName, subtitle, reader.messages(c.id, chatId, range), (m) => {
                const href = files.get(m.id);
                return href ? { href, missing: false } : { missing: true };
              }),
            ),
            { name: 'transcript.html' },
          );
        }
        archive.append(`${JSON.stringify({ missing }, null, 2)}\n`, { name: 'media-missing.json' });
        await archive.finalize();
      };
      fill().catch((err: unknown) => {
        request.log.error({ err }, 'chat export failed');
        archive.abort();
      });
      return reply
        .header('content-type', 'application/zip')
        .header('content-disposition', `attachment; filename="${exportName(chatId, 'zip')}"`)
        .send(archive);
    },
  );
};
