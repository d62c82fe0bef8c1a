/**
 * Resolving `:id` to a connection the caller may use. Unknown → 404 `Connection not found`; another user's →
 * 403; `stopped` (soft-deleted) → 404 on every route except reading the record itself.
 */
import { Type } from '@sinclair/typebox';
import type { AuthUser } from '../auth/authenticate.ts';
import type { ConnectionRow } from '../db/connections.ts';
import type { Store } from '../db/store.ts';
import { forbidden, notFound } from '../errors.ts';

export const ConnectionParams = Type.Object({ id: Type.String() });

/**
 * The caller's connection `id`.
 * @throws ServiceError 404 `Connection not found`, 403 `Connection belongs to another user`.
 */
export function ownedConnection(
  store: Pick<Store, 'connections'>,
  user: AuthUser,
  id: string,
  opts: { includeStopped?: boolean } = {},
): ConnectionRow {
  const row = store.connections.get(id);
  if (!row) throw notFound('Connection not found');
  if (row.userId !== user.id) throw forbidden('Connection belongs to another user');
  if (row.status === 'stopped' && !opts.includeStopped) throw notFound('Connection not found');
  return row;
}
