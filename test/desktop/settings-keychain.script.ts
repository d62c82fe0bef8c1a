/**
 * Run inside a D-Bus session with an unlocked gnome-keyring by settings-keychain.test.ts: the Stripe key saved
 * through `PATCH /api/settings` of a real service goes to the Secret Service, never to settings.json, and the next
 * start's loader (loadServiceConfig) bills through Stripe with it. Prints one JSON line of findings.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadServiceConfig } from '../../service/config/load-config.ts';
import { createLogger } from '../../service/config/logger.ts';
import { readStoredStripeKey } from '../../service/secrets/keychain.ts';
import { startService } from '../../service/index.ts';
import { Secret } from '../../service/secrets/secret.ts';

const KEY = 'sk_test_51KeychainOnlyValue';
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-keychain-settings-'));
const service = await startService(
  {
    host: '127.0.0.1',
    port: 0,
    dataDir,
    sandbox: false,
    sandboxPort: 0,
    waUrl: 'ws://127.0.0.1:9/ws/chat',
    logLevel: 'silent',
    workerId: 'local',
    typingDelayMs: { min: 0, max: 0 },
  },
  { logger: createLogger('silent'), settingsSources: { flags: {}, env: {} } },
);
const token = await service.issueOwnerToken('test');
const call = async (method: string, body?: unknown) => {
  const res = await fetch(`${service.apiUrl}/settings`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
};
const file = () => fs.readFileSync(path.join(dataDir, 'settings.json'), 'utf8');

const before = JSON.parse((await call('GET')).text);
const saved = await call('PATCH', { stripeSecretKey: KEY, billingProvider: 'stripe', stripePriceId: 'price_123' });
const afterSave = JSON.parse((await call('GET')).text);
const fileText = file();
const stored = await readStoredStripeKey(dataDir);
// Deleting the key while stripe needs it: refused, nothing changes.
const refusedDelete = await call('PATCH', { stripeSecretKey: null });
const storedAfterRefusal = await readStoredStripeKey(dataDir);
await service.close();

const next = await loadServiceConfig({ dataDir }, {});
const nextKey = next.billing?.stripe?.secretKey;

// Back to local and the key deleted.
const again = await startService({ ...next, port: 0, waUrl: 'ws://127.0.0.1:9/ws/chat' }, {
  logger: createLogger('silent'),
  settingsSources: { flags: {}, env: {} },
});
const token2 = await again.issueOwnerToken('test2');
const cleared = await fetch(`${again.apiUrl}/settings`, {
  method: 'PATCH',
  headers: { authorization: `Bearer ${token2}`, 'content-type': 'application/json' },
  body: JSON.stringify({ billingProvider: 'local', stripeSecretKey: null }),
});
const clearedBody = (await cleared.json()) as { stripeSecretKey: unknown; changed: string[] };
await again.close();
const storedAfterClear = await readStoredStripeKey(dataDir);
fs.rmSync(dataDir, { recursive: true, force: true });

process.stdout.write(
  JSON.stringify({
    before: before.stripeSecretKey,
    savedStatus: saved.status,
    savedEchoesKey: saved.text.includes(KEY),
    afterSave: afterSave.stripeSecretKey,
    restartRequired: afterSave.restartRequired,
    fileHasKey: fileText.includes(KEY) || fileText.includes('stripeSecretKey'),
    file: JSON.parse(fileText),
    keychainHoldsKey: stored === KEY,
    refusedDelete: refusedDelete.status,
    keptAfterRefusal: storedAfterRefusal === KEY,
    nextProvider: next.billing?.provider,
    nextKeyIsTheStoredOne: nextKey instanceof Secret && nextKey.reveal() === KEY,
    clearedStatus: cleared.status,
    clearedChanged: clearedBody.changed,
    cleared: clearedBody.stripeSecretKey,
    keychainAfterClear: storedAfterClear ?? null,
  }) + '\n',
);
