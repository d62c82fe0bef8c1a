/**
 * Fastify type provider for TypeBox: route handlers get `request.body`, `.query` and `.params` typed from the
 * same schemas that validate them (and that the OpenAPI document will be generated from).
 */
import type { Static, TSchema } from '@sinclair/typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyPluginAsync,
  FastifyTypeProvider,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';

export interface TypeBoxTypeProvider extends FastifyTypeProvider {
  validator: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
  serializer: this['schema'] extends TSchema ? Static<this['schema']> : unknown;
}

/** The Fastify instance type route plugins receive. */
export type ApiInstance = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** A route plugin with typed options, registered under the `/api` prefix. */
export type ApiPlugin<Options extends object> = FastifyPluginAsync<Options, RawServerDefault, TypeBoxTypeProvider>;
