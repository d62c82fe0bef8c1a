/** Run inside a D-Bus session with an unlocked gnome-keyring by secret-store.test.ts: exercises the real keychain. */
import { KeyringSecretStore, openSecretStore, PERSISTENT_STORE } from '../../service/secrets/secret-store.ts';

// The Secret Service of the private session only (never the kernel keyring of the user running the tests).
const store = await KeyringSecretStore.load('Switchboard-test', PERSISTENT_STORE);
await store.probe();
const key = `operator-token-${process.pid}`;
await store.set(key, 'wh_secret_value');
const read = await store.get(key);
const deleted = await store.delete(key);
const after = await store.get(key);
const reasons: string[] = [];
const opened = await openSecretStore({ dataDir: process.env.SB_DATA_DIR!, service: 'Switchboard-test', onDegraded: (r) => reasons.push(r) });
process.stdout.write(JSON.stringify({ read, deleted, after: after ?? null, backend: opened.backend, degraded: opened.degraded, reasons }) + '\n');
