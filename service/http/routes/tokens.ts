/**
 * API tokens (interface-spec §2.8, §4.6): list the caller's active tokens, create one (the token is in the
 * create response only), revoke one. Revoking takes effect at once, including for WebSocket streams opened
 * with the token (closed with 4401). Another user's token → 403 `Token belongs to another user`;
 * an unknown or already revoked id → 404 `Token not found`.
 */
import { Type } from '@sinclair/typebox';
import { issueToken } from '../../auth/api-tokens.ts';
import type { LiveCredentials } from '../../auth/live-credentials.ts';
import { conflict, forbidden, notFound } from '../../errors.ts';
import type { ApiDeps } from '../deps.ts';
import { errorResponses, Nullable, SuccessSchema } from '../schemas.ts';
import type { ApiPlugin } from '../type-provider.ts';

/** Active tokens a user may hold at once. */
export const MAX_TOKENS_PER_USER = 100;

export const TokenSchema = Type.Object({
  id: Type.String({ description: 'UUID' }),
  name: Type.String(),
  prefix: Type.String({ description: 'First 10 characters of the token, to recognise it' }),
  createdAt: Type.String({ description: 'ISO 8601' }),
  lastUsedAt: Nullable(Type.String({ description: 'ISO 8601; updated at most once a minute' })),
});

const CreatedTokenSchema = Type.Intersect([
  Type.Object({ token: Type.String({ description: 'The secret token (`wh_…`); shown only in this response' }) }),
  TokenSchema,
]);

const CreateBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100, description: 'A label, e.g. the script using it' }) },
  { additionalProperties: false },
);
const TokenParams = Type.Object({ id: Type.String() });

export interface TokenRouteOptions extends ApiDeps {
  live: LiveCredentials;
}

export const tokenRoutes: ApiPlugin<TokenRouteOptions> = async (api, { store: sync, asyncStore: store, live }) => {
  api.get('/tokens', { schema: { response: { 200: Type.Array(TokenSchema) } } }, async (request) =>
    store.read.tokens.listActive(request.user.id),
  );

  api.post(
    '/tokens',
    { schema: { body: CreateBody, response: { 201: CreatedTokenSchema, ...errorResponses([409, 'Token limit reached: revoke one first']) } } },
    async (request, reply) => {
      const created = await sync.txAsync(() => {
        if (sync.tokens.listActive(request.user.id).length >= MAX_TOKENS_PER_USER)
          throw conflict(`Token limit reached (${MAX_TOKENS_PER_USER} active tokens); revoke one first`);
        return issueToken(sync.tokens, request.user.id, request.body.name);
      });
      return reply.code(201).send({ token: created.token, ...created.record });
    },
  );

  api.delete(
    '/tokens/:id',
    { schema: { params: TokenParams, response: { 200: SuccessSchema } } },
    async (request) => {
      const token = await store.read.tokens.get(request.params.id);
      if (!token || token.revokedAt !== null) throw notFound('Token not found');
      if (token.userId !== request.user.id) throw forbidden('Token belongs to another user');
      await sync.txAsync(() => sync.tokens.revoke(token.id));
      live.revokeToken(token.id);
      return { success: true as const };
    },
  );
};
