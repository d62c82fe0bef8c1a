/**
 * Connections (interface-spec §4.1): list, create, get-or-create, read, rename, delete (soft: status `stopped`),
 * restart, QR code and phone-number pairing code (the profile, `/me`, is in profiles.ts). Sessions themselves are the
 * engine's; this file only starts, stops and asks it.
 */
import { randomUUID } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import QRCode from 'qrcode';
import { CONNECTION_STATUSES, type ConnectionRow, type ConnectionStatus } from '../../db/connections.ts';
import { booting, conflict } from '../../errors.ts';
import { ConnectionParams, errorResponses, Nullable, SuccessSchema } from '../schemas.ts';
import type { ApiDeps } from '../deps.ts';
import { billingOf } from './billing.ts';
import type { ApiPlugin } from '../type-provider.ts';

/** The spec's Connection (§2.1) plus `name`. */
export const ConnectionSchema = Type.Object({
  id: Type.String(),
  userId: Type.String(),
  name: Nullable(Type.String()),
  workerId: Type.String(),
  sessionName: Type.String(),
  phoneNumber: Nullable(Type.String()),
  status: Type.Union(CONNECTION_STATUSES.map((s) => Type.Literal(s))),
  statusReason: Nullable(
    Type.String({ description: 'Why the connection is in this status (as in its last session.status event), e.g. `storage unavailable`' }),
  ),
  engine: Type.Literal('NOWEB'),
  rejectCalls: Type.Boolean({ description: 'Incoming calls are rejected automatically' }),
  rejectCallsMessage: Nullable(Type.String({ description: 'Text sent to the caller after an automatic rejection' })),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type Connection = Static<typeof ConnectionSchema>;

/** Maps a stored row to the API record. */
export function toConnection(row: ConnectionRow, live?: { status: ConnectionStatus; reason: string | null }): Connection {
  // A running session knows better than the row while the disk is full (its status could not be stored).
  const current = live && row.status !== 'stopped' ? live : { status: row.status, reason: row.statusReason };
  return {
    id: row.id,
    userId: row.userId,
    name: row.name,
    workerId: row.workerId,
    sessionName: row.sessionName,
    phoneNumber: row.phoneNumber,
    status: current.status,
    statusReason: current.reason,
    engine: 'NOWEB',
    rejectCalls: row.rejectCalls,
    rejectCallsMessage: row.rejectCallsMessage,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

const Name = Type.String({ minLength: 1, maxLength: 100 });
const CreateBody = Type.Object({ name: Type.Optional(Name) }, { additionalProperties: false });
const UpdateBody = Type.Object(
  {
    name: Type.Optional(Nullable(Name)),
    rejectCalls: Type.Optional(Type.Boolean({ description: 'Reject every incoming call automatically' })),
    rejectCallsMessage: Type.Optional(Nullable(Type.String({ maxLength: 4096, description: 'Text sent to the caller after an automatic rejection (null or "" for none)' }))),
  },
  { additionalProperties: false },
);
const QrSchema = Type.Object({
  value: Type.String({ description: 'PNG image as a base64 data URL, or the raw QR string with ?format=text' }),
});
const QrQuery = Type.Object(
  { format: Type.Optional(Type.Union([Type.Literal('png'), Type.Literal('text')], { default: 'png' })) },
  { additionalProperties: false },
);
const ListQuery = Type.Object({
  include: Type.Optional(
    Type.Literal('deleted', { description: 'Addition: `deleted` also lists deleted connections (status `stopped`), read-only records' }),
  ),
});
const PairingCodeBody = Type.Object(
  {
    phoneNumber: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'The phone number of the WhatsApp account to link: international (`+15550100`) or a user JID',
    }),
  },
  { additionalProperties: false },
);
const PairingCodeSchema = Type.Object({
  code: Type.String({
    pattern: '^[0-9A-Z]{4}-[0-9A-Z]{4}$',
    description: 'Type it on the phone: WhatsApp → Linked devices → Link a device → Link with phone number instead',
  }),
});

/** Why a connection in `status` has no QR code to show (409). */
function noQrReason(status: ConnectionStatus): string {
  switch (status) {
    case 'connected':
    case 'online':
      return 'Connection is already linked';
    case 'logged_out':
      return 'Connection was logged out; restart it to link it again';
    default:
      return `Connection is ${status}; restart it to get a new QR code`;
  }
}

export const connectionRoutes: ApiPlugin<ApiDeps> = async (api, deps) => {
  const { store: sync, asyncStore: store, engine, workerId } = deps;
  const billing = billingOf(deps);
  const present = (row: ConnectionRow) => toConnection(row, engine.liveStatus(row.id));
  const reread = async (id: string) => present((await store.read.connections.get(id))!);

  /** Stores a new connection for `userId` and starts its session (status `starting`). */
  async function create(userId: string, name: string | null): Promise<Connection> {
    const row = await sync.txAsync(() => sync.connections.insert({ id: randomUUID(), userId, name, workerId }));
    engine.start(row.id);
    return reread(row.id);
  }

  api.get(
    '/connections',
    {
      schema: {
        description:
          'The caller’s connections, oldest first. Deleted ones (status `stopped`) are excluded as the spec says, unless `include=deleted` (an addition) asks for them too.',
        querystring: ListQuery,
        response: { 200: Type.Array(ConnectionSchema) },
      },
    },
    async (request) => (await store.read.connections.listByUser(request.user.id, { includeStopped: request.query.include === 'deleted' })).map(present),
  );

  api.post(
    '/connections',
    { schema: { body: CreateBody, response: { 201: ConnectionSchema, ...errorResponses(402) } } },
    // 402 `No free connection slot: N of N in use` when every slot is taken (billing/billing.ts).
    async (request, reply) => {
      const created = await billing.withFreeSlot(request.user.id, () => create(request.user.id, request.body.name ?? null));
      return reply.code(201).send(created);
    },
  );

  api.post(
    '/connections/get-or-create',
    { schema: { body: CreateBody, response: { 200: ConnectionSchema, 201: ConnectionSchema, ...errorResponses(402) } } },
    async (request, reply) => {
      const idle = await store.read.connections.findIdle(request.user.id);
      // Reusing an idle connection needs no new slot; creating one does (402 when none is free).
      if (!idle) {
        const created = await billing.withFreeSlot(request.user.id, () => create(request.user.id, request.body.name ?? null));
        return reply.code(201).send(created);
      }
      engine.start(idle.id); // idempotent: makes sure its session is running
      return reread(idle.id);
    },
  );

  api.get(
    '/connections/:id',
    { schema: { params: ConnectionParams, response: { 200: ConnectionSchema } }, config: { includeStoppedConnection: true } },
    async (request) => present(request.connection),
  );

  api.patch(
    '/connections/:id',
    { schema: { params: ConnectionParams, body: UpdateBody, response: { 200: ConnectionSchema } } },
    async (request) => {
      const c = request.connection;
      const { name, rejectCalls, rejectCallsMessage } = request.body;
      await sync.txAsync(() => {
        if (name !== undefined) sync.connections.rename(c.id, name);
        if (rejectCalls !== undefined || rejectCallsMessage !== undefined) {
          sync.connections.setCallSettings(c.id, rejectCalls ?? c.rejectCalls, rejectCallsMessage === undefined ? c.rejectCallsMessage : rejectCallsMessage || null);
        }
      });
      return reread(c.id);
    },
  );

  api.delete(
    '/connections/:id',
    { schema: { params: ConnectionParams, response: { 200: SuccessSchema } } },
    async (request) => {
      const c = request.connection;
      await engine.remove(c.id);
      return { success: true as const };
    },
  );

  api.post(
    '/connections/:id/restart',
    { schema: { params: ConnectionParams, response: { 200: ConnectionSchema } } },
    async (request) => {
      const c = request.connection;
      await engine.restart(c.id);
      return reread(c.id);
    },
  );

  api.get(
    '/connections/:id/qr',
    {
      schema: {
        params: ConnectionParams,
        querystring: QrQuery,
        response: {
          200: QrSchema,
          ...errorResponses(
            [409, 'The connection is not waiting for a scan, e.g. `Connection is already linked`'],
            [503, `${booting().message}: the session is starting or reconnecting (poll until available; see \`retry-after\`)`],
          ),
        },
      },
    },
    async (request) => {
      const c = request.connection;
      if (c.status === 'starting' || c.status === 'reconnecting') throw booting();
      if (c.status !== 'scan_qr') throw conflict(noQrReason(c.status));
      const qr = engine.currentQr(c.id);
      if (!qr) throw booting();
      if (request.query.format === 'text') return { value: qr };
      return { value: await QRCode.toDataURL(qr, { margin: 2, scale: 6 }) };
    },
  );

  api.post(
    '/connections/:id/pairing-code',
    {
      schema: {
        params: ConnectionParams,
        body: PairingCodeBody,
        response: {
          200: PairingCodeSchema,
          ...errorResponses([409, 'The connection is not waiting to be linked, e.g. `Connection is already linked`']),
        },
      },
    },
    async (request) => {
      const c = request.connection;
      return { code: await engine.requestPairingCode(c.id, request.body.phoneNumber) };
    },
  );
};
