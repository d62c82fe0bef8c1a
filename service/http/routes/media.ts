/**
 * Media (interface-spec §4.1, §4.2): `GET /connections/:id/media/:filename` streams a file of the connection's
 * media folder, `GET /connections/:id/messages/:messageId/media?chatId=` streams one message's media. Both answer
 * with the file's `Content-Type`, `Content-Length` and `Accept-Ranges: bytes`, serve one `Range` with 206 (416 when
 * it cannot be satisfied), and download the media first when it is not on disk (404 `Media not found` when that
 * fails). File names never leave the connection's folder (`..`, separators and NUL are refused with 400).
 */
import fs from 'node:fs';
import { Type } from '@sinclair/typebox';
import rangeParser from 'range-parser';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MediaFileInfo } from '../../engine/types.ts';
import { notFound } from '../../errors.ts';
import { canonicalChatIdIn } from '../../engine/chat-id.ts';
import type { ApiDeps } from '../deps.ts';
import { BinaryResponse, errorResponses } from '../schemas.ts';
import { errorBody } from '../plugins/errors.ts';
import type { ApiPlugin } from '../type-provider.ts';

const FileParams = Type.Object({ id: Type.String(), filename: Type.String() });
const MessageParams = Type.Object({ id: Type.String(), messageId: Type.String() });
const MessageQuery = Type.Object({
  chatId: Type.String({ minLength: 1, description: 'A JID (@s.whatsapp.net, @c.us, @lid, @g.us) or a phone number in international format' }),
});

/**
 * The byte range a `Range` header asks for (RFC 9110 §14, parsed by `range-parser`): undefined for none or for
 * several ranges (the whole file is sent), 'invalid' when it is malformed, not in bytes or unsatisfiable (416).
 */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'invalid' | undefined {
  if (!header) return undefined;
  const ranges = rangeParser(size, header, { combine: true });
  if (ranges === -1 || ranges === -2 || ranges.type !== 'bytes') return 'invalid';
  if (ranges.length !== 1) return undefined;
  return { start: ranges[0]!.start, end: ranges[0]!.end };
}

function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `inline; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

async function sendFile(request: FastifyRequest, reply: FastifyReply, file: MediaFileInfo) {
  const range = parseRange(request.headers.range, file.size);
  if (range === 'invalid') {
    return reply.code(416).header('content-range', `bytes */${file.size}`).send(errorBody(416, 'Range Not Satisfiable'));
  }
  reply
    .header('content-type', file.mimetype)
    .header('accept-ranges', 'bytes')
    .header('cache-control', 'private, no-cache')
    .header('x-content-type-options', 'nosniff');
  if (file.filename) reply.header('content-disposition', contentDisposition(file.filename));
  if (!range) return reply.header('content-length', file.size).send(fs.createReadStream(file.path));
  return reply
    .code(206)
    .header('content-range', `bytes ${range.start}-${range.end}/${file.size}`)
    .header('content-length', range.end - range.start + 1)
    .send(fs.createReadStream(file.path, { start: range.start, end: range.end }));
}

/** The responses of both media routes: the file (or one range of it) with its own Content-Type, or 416. */
const MediaResponses = {
  200: BinaryResponse('The file, with its `Content-Type`, `Content-Length` and `Accept-Ranges: bytes`', ['*/*']),
  206: BinaryResponse('The one byte range the `Range` header asked for (`Content-Range: bytes <start>-<end>/<size>`)', ['*/*']),
  ...errorResponses(416),
};

export const mediaRoutes: ApiPlugin<ApiDeps> = async (api, { asyncStore, engine }) => {
  const store = asyncStore.read;
  api.get('/connections/:id/media/:filename', { schema: { params: FileParams, response: MediaResponses } }, async (request, reply) => {
    const c = request.connection;
    return sendFile(request, reply, await engine.mediaFile(c.id, request.params.filename));
  });

  api.get(
    '/connections/:id/messages/:messageId/media',
    { schema: { params: MessageParams, querystring: MessageQuery, response: MediaResponses } },
    async (request, reply) => {
      const c = request.connection;
      const chatId = await canonicalChatIdIn(store, c.id, request.query.chatId);
      const message = await store.messages.get(c.id, request.params.messageId);
      if (!message || message.chatId !== chatId) throw notFound('Message not found');
      return sendFile(request, reply, await engine.messageMedia(c.id, message.id));
    },
  );
};
