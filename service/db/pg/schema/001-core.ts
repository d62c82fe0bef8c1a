/**
 * PostgreSQL migration 1: the core tables — users, API tokens, connections, the Baileys auth state, the event log,
 * settings, webhooks and their delivery outbox, billing, idempotency keys. Column for column the SQLite schema
 * (service/db/migrations.ts, as of its migration 14) with PostgreSQL types: ids and ISO 8601 times stay `text` (so
 * both engines return the same strings and order them the same way), flags are `boolean`, seqs and ms times `bigint`,
 * JSON documents `text` (a webhook body is the exact bytes sent). Never edit a shipped migration; append one.
 */
export const coreSchema = `
CREATE TABLE users (
  id             text PRIMARY KEY,
  kind           text NOT NULL CHECK (kind IN ('local', 'jwt')),
  name           text NOT NULL,
  email          text,
  issuer         text,
  subject        text,
  disabled       boolean NOT NULL DEFAULT false,
  last_event_seq bigint NOT NULL DEFAULT 0,   -- per-user event log counter, taken in the committing transaction
  created_at     text NOT NULL,
  ord            bigserial,                   -- creation order (SQLite's rowid): the tie-break of users.owner()
  CHECK ((kind = 'local' AND issuer IS NULL AND subject IS NULL)
      OR (kind = 'jwt' AND issuer IS NOT NULL AND subject IS NOT NULL))
);
CREATE UNIQUE INDEX users_local_name ON users(name) WHERE kind = 'local';
CREATE UNIQUE INDEX users_jwt_identity ON users(issuer, subject) WHERE kind = 'jwt';
CREATE INDEX users_created ON users(created_at, id);

CREATE TABLE api_tokens (
  id           text PRIMARY KEY,
  user_id      text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name         text NOT NULL,
  prefix       text NOT NULL,
  hash         text NOT NULL UNIQUE,
  created_at   text NOT NULL,
  last_used_at text,
  revoked_at   text
);
CREATE INDEX api_tokens_user ON api_tokens(user_id);

CREATE TABLE connections (
  id                   text PRIMARY KEY,
  user_id              text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name                 text,
  worker_id            text NOT NULL,
  session_name         text NOT NULL UNIQUE,
  phone_number         text,
  jid                  text,
  lid                  text,
  push_name            text,
  status               text NOT NULL,
  status_reason        text,
  reject_calls         boolean NOT NULL DEFAULT false,
  reject_calls_message text,
  created_at           text NOT NULL,
  updated_at           text NOT NULL
);
CREATE INDEX connections_user ON connections(user_id, created_at);

CREATE TABLE auth_creds (
  connection_id text PRIMARY KEY REFERENCES connections(id) ON DELETE CASCADE,
  creds         text NOT NULL
);
CREATE TABLE auth_keys (
  connection_id text NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  type          text NOT NULL,
  id            text NOT NULL,
  value         text NOT NULL,
  PRIMARY KEY (connection_id, type, id)
);

CREATE TABLE events (
  user_id       text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  seq           bigint NOT NULL,
  connection_id text,
  type          text NOT NULL,
  payload       text NOT NULL,
  created_at    text NOT NULL,
  PRIMARY KEY (user_id, seq)
);
CREATE INDEX events_created ON events(created_at);

CREATE TABLE settings (
  key   text PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE webhooks (
  id              text PRIMARY KEY,
  user_id         text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  connection_id   text NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  url             text NOT NULL,
  events          text NOT NULL,
  secret          text NOT NULL,
  active          boolean NOT NULL DEFAULT true,
  disabled_reason text,
  created_at      text NOT NULL,
  updated_at      text NOT NULL
);
CREATE INDEX webhooks_connection ON webhooks(connection_id);

CREATE TABLE webhook_deliveries (
  id              text PRIMARY KEY,
  webhook_id      text NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  user_id         text NOT NULL,
  event_seq       bigint NOT NULL,
  msg_id          text NOT NULL,
  event_type      text NOT NULL,
  body            text NOT NULL,
  status          text NOT NULL,
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at bigint NOT NULL,
  lease_until     bigint,
  last_status     integer,
  last_error      text,
  last_response   text,
  replay_of       text,
  delivered_at    text,
  created_at      text NOT NULL,
  ord             bigserial               -- insertion order (SQLite's rowid): the tie-break of the delivery log
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(webhook_id, status, next_attempt_at);
CREATE INDEX webhook_deliveries_log ON webhook_deliveries(webhook_id, created_at);
CREATE INDEX webhook_deliveries_open ON webhook_deliveries(status) WHERE status IN ('pending', 'delivering');
CREATE INDEX webhook_deliveries_event ON webhook_deliveries(user_id, event_seq);

CREATE TABLE billing_accounts (
  user_id     text PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
  local_slots integer,
  updated_at  text NOT NULL
);
CREATE TABLE stripe_customers (
  user_id         text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  mode            text NOT NULL,
  customer_id     text NOT NULL,
  subscription_id text,
  updated_at      text NOT NULL,
  PRIMARY KEY (user_id, mode)
);

CREATE TABLE idempotency_keys (
  user_id       text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  connection_id text NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
  key           text NOT NULL,
  fingerprint   text NOT NULL,
  route         text NOT NULL,
  state         text NOT NULL,
  message_id    text,
  status_code   integer,
  content_type  text,
  response      text,
  created_at    text NOT NULL,
  PRIMARY KEY (user_id, connection_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
`;
