/**
 * The group metadata cache across a service restart (issue 12 item 2): the sandbox runs as its own process, the
 * service (`serve --sandbox --wa-url`) is stopped and started again. Group metadata is kept in the store and handed
 * to Baileys as `cachedGroupMetadata`, following the group notifications (a member added while the service ran, one
 * added while it was down and delivered at the next login): the first sends after the restart ask the sandbox for
 * no group metadata (its admin counters of answered `w:g2` IQs do not move: no metadata query, no new listing of
 * the groups) and still reach every current member's phone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startSandboxProcess, startServe, type SandboxProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { waitFor } from '../helpers/wait.ts';
import { jsonCall, type LooseJson } from '../helpers/http.ts';

const PHONE = '+15550100';
const ALICE = '+15550101';
const BOB = '+15550102';
const CAROL = '+15550103';
const DAVE = '+15550104';
const enc = encodeURIComponent;
const keyIdOf = (messageId: string) => messageId.slice(messageId.lastIndexOf('_') + 1);

describe('group metadata across a service restart', () => {
  let dir: string;
  let sandbox: SandboxProcess;
  const services: ServiceProcess[] = [];
  let token: string;

  const serve = async () => {
    // --wa-query-pace 0: the test polls a group's metadata until a change shows (the pace has its own test).
    const s = await startServe(['--sandbox', '--wa-url', sandbox.wsUrl, '--wa-query-pace', '0', '--port', '0', '--data-dir', path.join(dir, 'service')]);
    services.push(s);
    return s;
  };
  const admin = (method: string, route: string, body?: unknown) => jsonCall(sandbox.url, method, route, body);
  const metadataQueries = async (groupId: string): Promise<number> =>
    ((await admin('GET', `/groups/${enc(groupId)}/metadata-queries`)).body.byPhone[PHONE] as number | undefined) ?? 0;
  const atPhone = (phone: string, keyId: string) =>
    waitFor(`message ${keyId} at ${phone}`, async () =>
      ((await admin('GET', `/accounts/${enc(phone)}/messages`)).body as LooseJson[]).find((m) => m.id === keyId),
    );

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-groupcache-'));
    sandbox = await startSandboxProcess(path.join(dir, 'sandbox'));
    for (const [phoneNumber, pushName] of [[CAROL, 'Carol Sandbox'], [DAVE, 'Dave Sandbox']]) {
      expect((await admin('POST', '/accounts', { phoneNumber, pushName })).status).toBe(201);
    }
    token = (await runCli(['token', 'create', '--user', 'ops', '--data-dir', path.join(dir, 'service')])).stdout.trim();
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop('SIGKILL')));
    await sandbox?.stop('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the first sends after a restart ask for no group metadata and reach the members as they are now', { timeout: 120_000 }, async () => {
    let service = await serve();
    const api = (method: string, route: string, body?: unknown) => jsonCall(service.apiUrl, method, route, body, token);
    const created = await api('POST', '/connections', {});
    const id = created.body.id as string;
    const qr = await waitFor('QR', async () => {
      const r = await api('GET', `/connections/${id}/qr?format=text`);
      return r.status === 200 ? (r.body.value as string) : undefined;
    });
    expect((await admin('POST', `/accounts/${enc(PHONE)}/scan`, { qr })).status).toBe(200);
    const online = () => waitFor('online', async () => ((await api('GET', `/connections/${id}`)).body.status === 'online' ? true : undefined), { timeoutMs: 30_000 });
    await online();
    const members = async (groupId: string) => {
      const r = await api('GET', `/connections/${id}/groups/${enc(groupId)}`);
      return r.status === 200 ? (r.body.participants as LooseJson[]).map((p) => p.phoneNumber as string) : [];
    };

    const team = ((await admin('GET', `/groups?member=${enc(PHONE)}`)).body as LooseJson[]).find((g) => g.subject === 'Sandbox Team').id as string;
    // A group Alice creates with the account in it (the service learns it from the creation notification), and a
    // member she adds while the service runs (a w:gp2 add notification).
    const club = (await admin('POST', '/groups', { creator: ALICE, subject: 'Club', participants: [PHONE, BOB] })).body.id as string;
    await waitFor('the club known to the service', async () => ((await members(club)).includes(BOB) ? true : undefined));
    expect((await admin('POST', `/groups/${enc(club)}/participants`, { by: ALICE, action: 'add', participants: [CAROL] })).status).toBe(200);
    await waitFor('Carol in the cached club', async () => ((await members(club)).includes(CAROL) ? true : undefined));

    // The counter counts: an update of the team's description reads the group's metadata from the server.
    const teamBefore = await metadataQueries(team);
    expect((await api('PATCH', `/connections/${id}/groups/${enc(team)}`, { description: 'Cached across restarts' })).status).toBe(200);
    expect(await metadataQueries(team)).toBeGreaterThan(teamBefore);

    expect(await service.stop('SIGTERM')).toBe(0);
    // While the service is down Alice adds Dave: the notification waits for the account's next login.
    expect((await admin('POST', `/groups/${enc(club)}/participants`, { by: ALICE, action: 'add', participants: [DAVE] })).status).toBe(200);
    const asked = { team: await metadataQueries(team), club: await metadataQueries(club) };
    const groupIqs = async () => (await admin('GET', `/accounts/${enc(PHONE)}/group-iqs`)).body as { total: number; byKind: Record<string, number> };
    const iqsBefore = await groupIqs();
    expect(iqsBefore.byKind.participating).toBeGreaterThanOrEqual(1); // the first connect listed the groups

    service = await serve();
    await online();
    await waitFor('Dave in the cached club (the offline notification)', async () => ((await members(club)).includes(DAVE) ? true : undefined));
    const toTeam = await api('POST', `/connections/${id}/send`, { chatId: team, text: 'team, after the restart', skipPresence: true });
    expect(toTeam.status, JSON.stringify(toTeam.body)).toBe(201);
    const toClub = await api('POST', `/connections/${id}/send`, { chatId: club, text: 'club, after the restart', skipPresence: true });
    expect(toClub.status, JSON.stringify(toClub.body)).toBe(201);
    for (const phone of [ALICE, BOB]) expect((await atPhone(phone, keyIdOf(toTeam.body.id))).text).toBe('team, after the restart');
    for (const phone of [ALICE, BOB, CAROL, DAVE]) expect((await atPhone(phone, keyIdOf(toClub.body.id))).text).toBe('club, after the restart');
    expect({ team: await metadataQueries(team), club: await metadataQueries(club) }).toEqual(asked);
    // Nothing about groups was asked at all after the restart: the cache came from the store, not a new listing.
    expect(await groupIqs()).toEqual(iqsBefore);
  });
});
