/**
 * Vitest global setup: names this run's PostgreSQL databases (`sb_<run>_*`, test/helpers/pg.ts) and, after the run,
 * drops every one still there — those of a test that failed before its `drop()`, or whose worker was killed. When
 * no PostgreSQL answers, nothing is created and nothing is dropped.
 */
import { randomBytes } from 'node:crypto';
import { databasesWithPrefix, dropDatabase, runPrefix } from './pg.ts';

export function setup(): void {
  process.env.SWITCHBOARD_TEST_PG_RUN = randomBytes(4).toString('hex');
}

export async function teardown(): Promise<void> {
  let left: string[];
  try {
    left = await databasesWithPrefix(runPrefix());
  } catch {
    return; // no server: no database of this run can exist
  }
  for (const name of left) await dropDatabase(name);
}
