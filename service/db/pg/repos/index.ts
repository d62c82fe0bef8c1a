/**
 * Every PostgreSQL repository, assembled into the `Repos` of one scope (the pool, or a transaction). A repository is
 * made on first use, so a group-commit unit that touches two repositories builds two.
 */
import type { Repos } from '../../store-api.ts';
import { pgAuthStateRepo } from './auth-state.ts';
import { pgBillingRepo } from './billing.ts';
import { pgConnectionsRepo } from './connections.ts';
import { pgDeliveriesRepo } from './deliveries.ts';
import { pgEventsRepo } from './events.ts';
import { pgIdempotencyRepo } from './idempotency.ts';
import { MESSAGE_REPO_FACTORIES } from './message-repos.ts';
import type { PgScope } from './scope.ts';
import { pgTokensRepo } from './tokens.ts';
import { pgUsersRepo } from './users.ts';
import { pgWebhooksRepo } from './webhooks.ts';

/** The factory of each repository (a Repos key missing here fails to typecheck). */
const FACTORIES: { [K in keyof Repos]: (scope: PgScope) => Repos[K] } = {
  users: pgUsersRepo,
  tokens: pgTokensRepo,
  connections: pgConnectionsRepo,
  authState: pgAuthStateRepo,
  events: pgEventsRepo,
  webhooks: pgWebhooksRepo,
  deliveries: pgDeliveriesRepo,
  idempotency: pgIdempotencyRepo,
  billing: pgBillingRepo,
  ...MESSAGE_REPO_FACTORIES,
};

/** The repositories over `scope`, each made when first read. */
export function pgRepos(scope: PgScope): Repos {
  const made: Partial<Record<keyof Repos, unknown>> = {};
  const repos = {} as Repos;
  for (const name of Object.keys(FACTORIES) as Array<keyof Repos>) {
    Object.defineProperty(repos, name, {
      enumerable: true,
      get: () => (made[name] ??= FACTORIES[name](scope)),
    });
  }
  return repos;
}
