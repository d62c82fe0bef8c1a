/** Run inside a D-Bus session with an unlocked gnome-keyring by secret-store.test.ts: exercises the real keychain. */
import { KeyringSecretStore, openSecretStore } from '../../service/secrets/secret-store.ts';

const store = await KeyringSecretStore.load('Switchboard-test');
await store.probe();
const key = `operator-token-${process.pid}`;
await store.set(key, 'wh_secret_value');
const read = await store.get(key);
const deleted = await store.delete(key);
const after = await store.get(key);
const reasons: string[] = [];
const opened = await openSecretStore({ dataDir: process.env.SB_DATA_DIR!, service: 'Switchboard-test', onDegraded: (r) => reasons.push(r) });
process.stdout.write(JSON.stringify({ read, deleted, after: after ?? null, backend: opened.backend, degraded: opened.degraded, reasons }) + '\n');
