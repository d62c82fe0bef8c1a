/**
 * Every status a test sees the API answer on a route must be declared for that route in the OpenAPI document
 * (issue 25 item 5): clients generate code from the document, and an undeclared status is one they cannot handle.
 *
 * As a vitest global setup (vitest.config.ts) it makes a directory for the run and names it in
 * SWITCHBOARD_TEST_STATUS_LOG, which every process of the run inherits (test workers, the `switchboard serve`
 * children they spawn): each API instance then records the `(method, route, status)` it answered with whether its
 * own served document declares it (service/http/status-log.ts). At the end of the run the summary reporter calls
 * {@link checkStatusCoverage}: an undeclared status is printed and fails the run (exit code 1). The teardown
 * removes the directory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { STATUS_LOG_ENV, type StatusRecord } from '../../service/http/status-log.ts';

/** What the run's API instances answered: how many distinct (method, route, status), and the undeclared ones. */
export interface StatusCoverage {
  observed: number;
  undeclared: Array<Omit<StatusRecord, 'declared'>>;
}

/** Reads the records of the run in `dir` (default: the run's directory). */
export function checkStatusCoverage(dir: string | undefined = process.env[STATUS_LOG_ENV]): StatusCoverage {
  const observed = new Set<string>();
  const undeclared = new Map<string, Omit<StatusRecord, 'declared'>>();
  if (!dir || !fs.existsSync(dir)) return { observed: 0, undeclared: [] };
  for (const name of fs.readdirSync(dir).filter((n) => n.endsWith('.jsonl'))) {
    for (const line of fs.readFileSync(path.join(dir, name), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      let r: StatusRecord;
      try {
        r = JSON.parse(line) as StatusRecord;
      } catch {
        continue; // a line cut short by a process killed mid-write
      }
      const key = `${r.method} ${r.route} ${r.status}`;
      observed.add(key);
      if (!r.declared) undeclared.set(key, { method: r.method, route: r.route, status: r.status });
    }
  }
  return { observed: observed.size, undeclared: [...undeclared.values()].sort((a, b) => a.route.localeCompare(b.route) || a.status - b.status) };
}

export default function setup(): () => void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-status-log-'));
  process.env[STATUS_LOG_ENV] = dir;
  return () => fs.rmSync(dir, { recursive: true, force: true });
}
