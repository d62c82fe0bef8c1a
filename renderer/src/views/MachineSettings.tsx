/**
 * The machine's settings in the Settings view (issue 18 item 2; docs/settings.md): API port, LAN webhooks, worker
 * id, billing provider, Stripe price id, and the Stripe secret key as a write-only field kept in the OS keychain.
 * Only the machine's owner may see and change them (the API answers 403 to anyone else; this says so). Saving sends
 * only what changed; what waits for a restart is listed with a "Restart now" button where the service can restart
 * itself (the desktop app), else with what to do (headless `serve`). A setting a flag or environment variable sets
 * is shown locked with its name.
 */
import {
  Alert,
  Button,
  Group,
  NumberInput,
  PasswordInput,
  SegmentedControl,
  Stack,
  Switch,
  Text,
  TextInput,
} from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useEffect, useState } from 'react';
import { ApiError, errorMessage } from '../api/client.ts';
import type { MachineSettingsPatch, MachineSettingsView } from '../api/types.ts';
import { useSession, useClient } from '../stores/session.ts';

const LABELS: Record<string, string> = {
  port: 'API port',
  allowLanWebhooks: 'LAN webhooks',
  workerId: 'Worker id',
  billingProvider: 'Billing provider',
  stripePriceId: 'Stripe price id',
  stripeSecretKey: 'Stripe secret key',
};

interface Draft {
  port: number | string;
  allowLanWebhooks: boolean;
  workerId: string;
  billingProvider: 'local' | 'stripe';
  stripePriceId: string;
  /** '' = leave the stored key as it is. */
  stripeSecretKey: string;
}

function draftOf(view: MachineSettingsView): Draft {
  const s = view.settings;
  return {
    port: s.port.value,
    allowLanWebhooks: s.allowLanWebhooks.value,
    workerId: s.workerId.value,
    billingProvider: s.billingProvider.value,
    stripePriceId: s.stripePriceId.value ?? '',
    stripeSecretKey: '',
  };
}

/** Only the fields that differ from what the service has. */
function patchOf(view: MachineSettingsView, d: Draft): MachineSettingsPatch {
  const s = view.settings;
  const patch: MachineSettingsPatch = {};
  const port = typeof d.port === 'number' ? d.port : Number(d.port);
  if (port !== s.port.value) patch.port = port;
  if (d.allowLanWebhooks !== s.allowLanWebhooks.value) patch.allowLanWebhooks = d.allowLanWebhooks;
  if (d.workerId.trim() !== s.workerId.value) patch.workerId = d.workerId.trim();
  if (d.billingProvider !== s.billingProvider.value) patch.billingProvider = d.billingProvider;
  const price = d.stripePriceId.trim();
  if (price !== (s.stripePriceId.value ?? '')) patch.stripePriceId = price === '' ? null : price;
  if (d.stripeSecretKey.trim() !== '') patch.stripeSecretKey = d.stripeSecretKey.trim();
  return patch;
}

const lockNote = (lockedBy: string | null) => (lockedBy ? `Set by ${lockedBy} for this service; change it there.` : undefined);

export function MachineSettings() {
  const client = useClient();
  const portFallback = useSession((s) => s.health?.portFallback);
  const [view, setView] = useState<MachineSettingsView | null>(null);
  const [draft, setDraft] = useState<Draft | null>(null);
  const [loadError, setLoadError] = useState<ApiError | Error | null>(null);
  const [saveError, setSaveError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [restarting, setRestarting] = useState(false);

  const show = (v: MachineSettingsView) => {
    setView(v);
    setDraft(draftOf(v));
  };
  useEffect(() => {
    client.settings().then(show, (err: Error) => setLoadError(err));
  }, [client]);

  if (loadError) {
    if (loadError instanceof ApiError && loadError.status === 403)
      return (
        <Text c="dimmed" size="sm" data-testid="machine-settings-forbidden">
          Only this machine&apos;s owner (its first local user) can see and change the machine&apos;s settings.
        </Text>
      );
    return (
      <Alert color="red" title="The settings could not be read" data-testid="machine-settings-error">
        {errorMessage(loadError)}
      </Alert>
    );
  }
  if (!view || !draft) return <Text size="sm" c="dimmed">Loading…</Text>;

  const s = view.settings;
  const key = view.stripeSecretKey;
  const patch = patchOf(view, draft);
  const dirty = Object.keys(patch).length > 0;
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => setDraft({ ...draft, [k]: v });

  const save = async () => {
    setBusy(true);
    setSaveError(null);
    try {
      const saved = await client.updateSettings(patch);
      show(saved);
      notifications.show({ color: 'green', title: 'Settings saved', message: saved.changed.length ? saved.changed.map((n) => LABELS[n] ?? n).join(', ') : 'Nothing changed' });
    } catch (err) {
      setSaveError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  const removeKey = async () => {
    setBusy(true);
    setSaveError(null);
    try {
      show(await client.updateSettings({ stripeSecretKey: null }));
    } catch (err) {
      setSaveError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  const restart = async () => {
    setRestarting(true);
    try {
      await client.restartService();
      // The desktop app reloads this window at the service's (possibly new) address; until then wait for it.
      for (let attempt = 0; ; attempt++) {
        await new Promise((r) => setTimeout(r, 1000));
        const fresh = await client.settings().catch(() => undefined);
        if (fresh && fresh.restartRequired.length === 0) {
          show(fresh);
          break;
        }
        if (attempt === 60) throw new Error('The service has not come back after a minute; see its log.');
      }
    } catch (err) {
      setSaveError(errorMessage(err));
    } finally {
      setRestarting(false);
    }
  };

  const keyPlaceholder =
    key.source === 'keychain' ? 'Stored in the keychain' : key.source === 'env' ? 'Set by SWITCHBOARD_STRIPE_SECRET_KEY' : 'Not set';
  const keyNote =
    lockNote(key.lockedBy) ??
    (key.keychain
      ? 'Write-only: kept in the OS keychain, never shown and never written to settings.json.'
      : "No OS keychain is available to the service: set SWITCHBOARD_STRIPE_SECRET_KEY in its environment instead.");

  return (
    <Stack gap="sm" data-testid="machine-settings">
      {portFallback && (
        <Alert color="yellow" title="The API is not on its configured port" data-testid="settings-port-fallback">
          {portFallback.message}
        </Alert>
      )}
      <NumberInput
        label="API port"
        description={lockNote(s.port.lockedBy) ?? 'Default 7575; 0 picks a free port at every start. Applies after a restart.'}
        min={0}
        max={65535}
        allowDecimal={false}
        allowNegative={false}
        value={draft.port}
        onChange={(v) => set('port', v)}
        disabled={!!s.port.lockedBy}
        data-testid="setting-port"
      />
      <Switch
        label="Allow webhooks to LAN addresses"
        description={
          lockNote(s.allowLanWebhooks.lockedBy) ??
          'Webhooks and send-* url fetches may reach loopback and private-network addresses (http:// too). Applies at once.'
        }
        checked={draft.allowLanWebhooks}
        onChange={(e) => set('allowLanWebhooks', e.currentTarget.checked)}
        disabled={!!s.allowLanWebhooks.lockedBy}
        data-testid="setting-lan"
      />
      <TextInput
        label="Worker id"
        description={lockNote(s.workerId.lockedBy) ?? 'Shown on connections. Applies after a restart.'}
        value={draft.workerId}
        onChange={(e) => set('workerId', e.currentTarget.value)}
        disabled={!!s.workerId.lockedBy}
        data-testid="setting-worker-id"
      />
      <Stack gap={4}>
        <Text size="sm" fw={500}>
          Billing provider
        </Text>
        <SegmentedControl
          value={draft.billingProvider}
          onChange={(v) => set('billingProvider', v as Draft['billingProvider'])}
          data={[
            { value: 'local', label: 'Local (no payments)' },
            { value: 'stripe', label: 'Stripe' },
          ]}
          disabled={!!s.billingProvider.lockedBy}
          aria-label="Billing provider"
          data-testid="setting-billing-provider"
        />
        {s.billingProvider.lockedBy && (
          <Text size="xs" c="dimmed">
            {lockNote(s.billingProvider.lockedBy)}
          </Text>
        )}
      </Stack>
      {(draft.billingProvider === 'stripe' || s.stripePriceId.value) && (
        <TextInput
          label="Stripe price id"
          description={lockNote(s.stripePriceId.lockedBy) ?? 'The recurring per-slot price, price_…'}
          value={draft.stripePriceId}
          onChange={(e) => set('stripePriceId', e.currentTarget.value)}
          disabled={!!s.stripePriceId.lockedBy}
          data-testid="setting-stripe-price"
        />
      )}
      <Group align="flex-end" wrap="nowrap">
        <PasswordInput
          style={{ flex: 1 }}
          label="Stripe secret key"
          description={keyNote}
          placeholder={keyPlaceholder}
          value={draft.stripeSecretKey}
          onChange={(e) => set('stripeSecretKey', e.currentTarget.value)}
          disabled={!!key.lockedBy || !key.keychain}
          autoComplete="off"
          data-testid="setting-stripe-key"
        />
        {key.source === 'keychain' && (
          <Button variant="default" onClick={() => void removeKey()} disabled={busy} data-testid="setting-stripe-key-remove">
            Remove key
          </Button>
        )}
      </Group>
      {saveError && (
        <Alert color="red" title="Not saved" data-testid="settings-error">
          {saveError}
        </Alert>
      )}
      <Group>
        <Button onClick={() => void save()} disabled={!dirty} loading={busy} data-testid="settings-save">
          Save
        </Button>
        {dirty && (
          <Button variant="subtle" onClick={() => setDraft(draftOf(view))}>
            Discard changes
          </Button>
        )}
      </Group>
      {view.restartRequired.length > 0 && (
        <Alert color="yellow" title="Restart to apply" data-testid="restart-notice">
          <Stack gap="xs">
            <Text size="sm">
              Saved, but in effect only after a restart: {view.restartRequired.map((n) => LABELS[n] ?? n).join(', ')}.
            </Text>
            {view.canRestart ? (
              <Group>
                <Button size="xs" onClick={() => void restart()} loading={restarting} data-testid="restart-now">
                  Restart now
                </Button>
              </Group>
            ) : (
              <Text size="sm">
                Restart <code>switchboard serve</code> to apply them (stop it and start it again, or restart its system
                service).
              </Text>
            )}
          </Stack>
        </Alert>
      )}
      <Text size="xs" c="dimmed">
        Saved in <span className="mono">{view.file}</span>. Flags and SWITCHBOARD_* variables win over this file.
      </Text>
    </Stack>
  );
}
