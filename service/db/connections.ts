/**
 * Connections table: one row per linked (or linking) account. Soft delete sets status `stopped`.
 */
import type { Db } from './database.ts';
import { flagOf, nowIso } from './database.ts';

/**
 * Connection status values (docs/architecture.md § Connection status): starting → scan_qr → connected → online;
 * reconnecting, logged_out, failed; stopped = deleted.
 */
export const CONNECTION_STATUSES = [
  'starting',
  'scan_qr',
  'connected',
  'online',
  'reconnecting',
  'logged_out',
  'failed',
  'stopped',
] as const;
export type ConnectionStatus = (typeof CONNECTION_STATUSES)[number];

export interface ConnectionRow {
  id: string;
  userId: string;
  name: string | null;
  workerId: string;
  sessionName: string;
  phoneNumber: string | null;
  jid: string | null;
  lid: string | null;
  pushName: string | null;
  status: ConnectionStatus;
  statusReason: string | null;
  /** Reject every incoming call automatically (issue 14 item 8). */
  rejectCalls: boolean;
  /** Text sent to the caller after an automatic rejection; null = none. */
  rejectCallsMessage: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A `connections` row as either engine returns it (`reject_calls`: SQLite 0/1, PostgreSQL boolean). */
export interface ConnectionRawRow {
  id: string;
  user_id: string;
  name: string | null;
  worker_id: string;
  session_name: string;
  phone_number: string | null;
  jid: string | null;
  lid: string | null;
  push_name: string | null;
  status: ConnectionStatus;
  status_reason: string | null;
  reject_calls: number | boolean;
  reject_calls_message: string | null;
  created_at: string;
  updated_at: string;
}

/** The ConnectionRow of a raw `connections` row. */
export function connectionOfRow(r: ConnectionRawRow): ConnectionRow {
  return {
    id: r.id,
    userId: r.user_id,
    name: r.name,
    workerId: r.worker_id,
    sessionName: r.session_name,
    phoneNumber: r.phone_number,
    jid: r.jid,
    lid: r.lid,
    pushName: r.push_name,
    status: r.status,
    statusReason: r.status_reason,
    rejectCalls: flagOf(r.reject_calls),
    rejectCallsMessage: r.reject_calls_message,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** `u_<first 8 of userId>_s_<first 8 of connectionId>` (docs/architecture.md § Ids), dashes removed. */
export function sessionNameFor(userId: string, connectionId: string): string {
  const short = (s: string) => s.replace(/-/g, '').slice(0, 8);
  return `u_${short(userId)}_s_${short(connectionId)}`;
}

/** Named queries over `connections`. */
export function connectionsRepo(db: Db) {
  const q = {
    get: db.prepare(`SELECT * FROM connections WHERE id = ?`),
    listByUser: db.prepare(`SELECT * FROM connections WHERE user_id = ? AND status <> 'stopped' ORDER BY created_at, id`),
    listAllByUser: db.prepare(`SELECT * FROM connections WHERE user_id = ? ORDER BY created_at, id`),
    listActive: db.prepare(`SELECT * FROM connections WHERE status <> 'stopped' ORDER BY created_at, id`),
    countActiveByUser: db.prepare(`SELECT count(*) AS n FROM connections WHERE user_id = ? AND status <> 'stopped'`),
    countActive: db.prepare(`SELECT count(*) AS n FROM connections WHERE status <> 'stopped'`),
    findIdle: db.prepare(
      `SELECT * FROM connections WHERE user_id = ? AND status IN ('starting','scan_qr','reconnecting') AND jid IS NULL
       ORDER BY created_at DESC LIMIT 1`,
    ),
    insert: db.prepare(
      `INSERT INTO connections (id, user_id, name, worker_id, session_name, status, created_at, updated_at)
       VALUES (@id, @userId, @name, @workerId, @sessionName, @status, @now, @now)`,
    ),
    setStatus: db.prepare(
      `UPDATE connections SET status = @status, status_reason = @reason, updated_at = @now WHERE id = @id`,
    ),
    setAccount: db.prepare(
      `UPDATE connections SET phone_number = @phoneNumber, jid = @jid, lid = COALESCE(@lid, lid),
         push_name = COALESCE(@pushName, push_name), updated_at = @now WHERE id = @id`,
    ),
    rename: db.prepare(`UPDATE connections SET name = @name, updated_at = @now WHERE id = @id`),
    setCallSettings: db.prepare(
      `UPDATE connections SET reject_calls = @rejectCalls, reject_calls_message = @message, updated_at = @now WHERE id = @id`,
    ),
  };

  return {
    get(id: string): ConnectionRow | undefined {
      const r = q.get.get(id) as ConnectionRawRow | undefined;
      return r && connectionOfRow(r);
    },
    /** The user's connections except `stopped` (or with them: `includeStopped`), oldest first. */
    listByUser(userId: string, opts: { includeStopped?: boolean } = {}): ConnectionRow[] {
      return ((opts.includeStopped ? q.listAllByUser : q.listByUser).all(userId) as ConnectionRawRow[]).map(connectionOfRow);
    },
    /** Every connection not `stopped`, for starting sessions at boot. */
    listActive(): ConnectionRow[] {
      return (q.listActive.all() as ConnectionRawRow[]).map(connectionOfRow);
    },
    countActiveByUser(userId: string): number {
      return (q.countActiveByUser.get(userId) as { n: number }).n;
    },
    /** Connections of all users that are not `stopped` (health endpoint). */
    countActive(): number {
      return (q.countActive.get() as { n: number }).n;
    },
    /** Newest connection of the user that never linked and is waiting for a scan (or for the server, to show one), if any. */
    findIdle(userId: string): ConnectionRow | undefined {
      const r = q.findIdle.get(userId) as ConnectionRawRow | undefined;
      return r && connectionOfRow(r);
    },
    insert(c: { id: string; userId: string; name: string | null; workerId: string }): ConnectionRow {
      q.insert.run({ ...c, sessionName: sessionNameFor(c.userId, c.id), status: 'starting', now: nowIso() });
      return this.get(c.id)!;
    },
    setStatus(id: string, status: ConnectionStatus, reason: string | null): void {
      q.setStatus.run({ id, status, reason, now: nowIso() });
    },
    setAccount(
      id: string,
      a: { phoneNumber: string | null; jid: string | null; lid?: string | null; pushName?: string | null },
    ): void {
      q.setAccount.run({ id, phoneNumber: a.phoneNumber, jid: a.jid, lid: a.lid ?? null, pushName: a.pushName ?? null, now: nowIso() });
    },
    rename(id: string, name: string | null): void {
      q.rename.run({ id, name, now: nowIso() });
    },
    /** Sets the automatic call rejection (and its optional text to the caller). */
    setCallSettings(id: string, rejectCalls: boolean, message: string | null): void {
      q.setCallSettings.run({ id, rejectCalls: rejectCalls ? 1 : 0, message, now: nowIso() });
    },
  };
}
