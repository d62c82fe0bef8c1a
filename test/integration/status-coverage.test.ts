/**
 * The status coverage of a test run (test/helpers/status-coverage.ts, service/http/status-log.ts): with
 * SWITCHBOARD_TEST_STATUS_LOG set, an API instance records each (method, route, status) it answers once, with
 * whether its served OpenAPI document declares that status for that route; the run's check lists the undeclared
 * ones. Without the variable nothing is recorded.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { declaresStatus, STATUS_LOG_ENV, type StatusRecord } from '../../service/http/status-log.ts';
import { checkStatusCoverage } from '../helpers/status-coverage.ts';
import { startTestApi, type TestApi } from './api-harness.ts';

const readRecords = (dir: string): StatusRecord[] =>
  fs
    .readdirSync(dir)
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n'))
    .filter(Boolean)
    .map((l) => JSON.parse(l) as StatusRecord);

describe('status coverage of the test run', () => {
  const runDir = process.env[STATUS_LOG_ENV];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-status-cov-'));
  let api: TestApi;

  beforeAll(async () => {
    process.env[STATUS_LOG_ENV] = dir; // this file's records go here, not to the run's directory
    api = await startTestApi();
  });
  afterAll(async () => {
    await api?.close();
    if (runDir === undefined) delete process.env[STATUS_LOG_ENV];
    else process.env[STATUS_LOG_ENV] = runDir;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('records each (method, route, status) once with whether the served document declares it', async () => {
    const user = api.user('alice');
    const c = api.connection(user.id, 'starting');
    for (let i = 0; i < 3; i++) expect((await api.request('GET', `/connections/${c.id}/qr`, { token: user.token })).status).toBe(503);
    expect((await api.request('GET', '/connections/nope', { token: user.token })).status).toBe(404);
    expect((await api.request('HEAD', `/connections/${c.id}`, { token: user.token })).status).toBe(200);
    expect((await api.request('GET', '/no-such-route', { token: user.token })).status).toBe(404);
    const records = readRecords(dir);
    expect(records).toEqual(
      expect.arrayContaining([
        { method: 'GET', route: '/api/connections/:id/qr', status: 503, declared: true },
        { method: 'GET', route: '/api/connections/:id', status: 404, declared: true },
        { method: 'GET', route: '/api/connections/:id', status: 200, declared: true }, // the HEAD, as its GET twin
      ]),
    );
    expect(records.filter((r) => r.route === '/api/connections/:id/qr')).toHaveLength(1);
    expect(records.some((r) => r.route.includes('no-such-route'))).toBe(false);
    expect(checkStatusCoverage(dir)).toEqual({ observed: records.length, undeclared: [] });
  });

  it('finds what the document does not declare, by exact code, range or default', async () => {
    const doc = (await api.request<Parameters<typeof declaresStatus>[0]>('GET', '/openapi.json')).body;
    expect(declaresStatus(doc, 'GET', '/api/connections/:id/qr', 503)).toBe(true);
    expect(declaresStatus(doc, 'HEAD', '/api/connections/:id', 200)).toBe(true);
    expect(declaresStatus(doc, 'GET', '/api/connections/:id/qr', 418)).toBe(false);
    expect(declaresStatus(doc, 'GET', '/api/no-such-route', 200)).toBe(false);
    const ranged = { servers: [{ url: '/api' }], paths: { '/x/{id}': { get: { responses: { '2XX': {}, default: {} } } } } };
    expect(declaresStatus(ranged, 'GET', '/api/x/:id', 204)).toBe(true);
    expect(declaresStatus({ paths: { '/x': { get: { responses: { '200': {} } } } } }, 'GET', '/x', 500)).toBe(false);

    // The run's check lists an undeclared answer, once, and tolerates a line cut short by a killed process.
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-status-cov-'));
    const line = (r: StatusRecord) => JSON.stringify(r) + '\n';
    fs.writeFileSync(path.join(other, '1.jsonl'), line({ method: 'GET', route: '/api/x', status: 418, declared: false }) + '{"meth');
    fs.writeFileSync(path.join(other, '2.jsonl'), line({ method: 'GET', route: '/api/x', status: 418, declared: false }) + line({ method: 'GET', route: '/api/x', status: 200, declared: true }));
    expect(checkStatusCoverage(other)).toEqual({ observed: 2, undeclared: [{ method: 'GET', route: '/api/x', status: 418 }] });
    fs.rmSync(other, { recursive: true, force: true });
  });

  it('records nothing without the variable', async () => {
    delete process.env[STATUS_LOG_ENV];
    const quiet = await startTestApi();
    try {
      const before = readRecords(dir).length;
      const user = quiet.user('bob');
      expect((await quiet.request('GET', '/connections/nope', { token: user.token })).status).toBe(404);
      expect((await quiet.request('GET', '/tokens', { token: user.token })).status).toBe(200);
      expect(readRecords(dir)).toHaveLength(before);
    } finally {
      await quiet.close();
      process.env[STATUS_LOG_ENV] = dir;
    }
  });
});
