/**
 * Shapes of the local API as the console uses them, derived from the types generated from the service's own
 * OpenAPI document (`openapi.gen.ts`, `npm run gen:api-types`; a test fails when it drifts from the routes).
 * Only what the OpenAPI cannot describe (the WebSocket frame, console-side flags) is written here by hand.
 */
import type { paths } from './openapi.gen.ts';
import { EVENT_TYPES as GENERATED_EVENT_TYPES } from './openapi.gen.ts';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
/** The JSON body a route answers with `status` (default 200). */
export type ResponseOf<P extends keyof paths, M extends Method, S extends number = 200> = paths[P] extends {
  [K in M]: { responses: { [C in S]: { content: { 'application/json': infer T } } } };
}
  ? T
  : never;
/** The JSON request body a route takes. */
export type RequestOf<P extends keyof paths, M extends Method> = paths[P] extends {
  [K in M]: { requestBody?: { content: { 'application/json': infer T } } };
}
  ? T
  : never;

export type Health = ResponseOf<'/', 'get'>;
export type Connection = ResponseOf<'/connections/{id}', 'get'>;
export type ConnectionStatus = Connection['status'];
export type Profile = ResponseOf<'/connections/{id}/me', 'get'>;
export type ContactProfile = ResponseOf<'/connections/{id}/contacts/{jid}/profile', 'get'>;
/** POST /connections/:id/pairing-code: `{ code: 'ABCD-EFGH' }`. */
export type PairingCode = ResponseOf<'/connections/{id}/pairing-code', 'post'>;
export type Chat = ResponseOf<'/connections/{id}/chats', 'get'>[number];
export type MessagePage = ResponseOf<'/connections/{id}/chats/{chatId}/messages', 'get'>;
type StoredMessage = MessagePage['messages'][number];
export type MediaInfo = NonNullable<StoredMessage['media']>;
export type MessageType = StoredMessage['type'];
/** A search answer across connections (`GET /search`); one connection's answer lacks `connectionId`. */
export type SearchPage = ResponseOf<'/search', 'get'>;
export type SearchResult = SearchPage['results'][number];
export type Message = StoredMessage & {
  /** Edited while this console watched (before a reload shows editedAt). */
  edited?: boolean;
  /** A bubble shown before the API answered (`pending`), or whose send failed (`failed`, with `retry`). */
  local?: { state: 'pending' | 'failed'; error?: string; retry?: () => void };
};

export interface EventFrame {
  event: string;
  connectionId: string;
  payload: Record<string, unknown>;
  timestamp: string;
  seq: number;
}

export type Contact = ResponseOf<'/connections/{id}/contacts', 'get'>[number];
export type NumberCheck = ResponseOf<'/connections/{id}/contacts/check', 'post'>[number];
export type GroupInfo = ResponseOf<'/connections/{id}/groups/{groupId}', 'get'>;
export type GroupParticipant = GroupInfo['participants'][number];
export type EventsPage = ResponseOf<'/events', 'get'>;
export type Webhook = ResponseOf<'/connections/{id}/webhooks', 'get'>[number];
export type WebhookDelivery = ResponseOf<'/webhooks/{id}/logs', 'get'>[number];
export type ApiToken = ResponseOf<'/tokens', 'get'>[number];
/** POST /tokens: the token record plus the secret value, shown once. */
export type CreatedToken = ResponseOf<'/tokens', 'post', 201>;
export type BillingStatus = ResponseOf<'/billing/status', 'get'>;
export type SlotChange = ResponseOf<'/billing/slots', 'put'>;
/** The machine's settings (owner only): values, their sources, the Stripe key's place, what waits for a restart. */
export type MachineSettingsView = ResponseOf<'/settings', 'get'>;
export type MachineSettingsPatch = RequestOf<'/settings', 'patch'>;
export type MachineSettingsSaved = ResponseOf<'/settings', 'patch'>;

export interface ApiErrorBody {
  message: string;
  statusCode: number;
  error?: string;
}

/** Event types the service emits, as the server lists them (generated). */
export const EVENT_TYPES = GENERATED_EVENT_TYPES;
