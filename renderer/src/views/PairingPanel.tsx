/**
 * Pairing: shows the connection's QR code and keeps it current while the phone has not scanned it. A 503
 * ("Worker is booting") shows a spinner and retries after Retry-After; the code is re-fetched every few seconds
 * because it rotates; once the connection is linked (status event or a 409) it calls `onLinked`. "Link with phone
 * number instead" swaps the QR for a phone-number form and the code to type on the phone (PhoneCodeLink).
 */
import { Alert, Button, Center, Group, Image, List, Loader, Stack, Text } from '@mantine/core';
import { IconCircleCheck } from '@tabler/icons-react';
import { useEffect, useRef, useState } from 'react';
import { ApiError, errorMessage, type ApiClient } from '../api/client.ts';
import { StatusBadge } from '../components/StatusBadge.tsx';
import { useConnections } from '../stores/connections.ts';
import { PhoneCodeLink } from './PhoneCodeLink.tsx';

export const QR_REFRESH_MS = 3000;
const LINKED = new Set(['connected', 'online']);

export type QrState =
  | { kind: 'booting' }
  | { kind: 'qr'; value: string; version: number }
  | { kind: 'linked' }
  | { kind: 'needs-restart'; message: string }
  | { kind: 'error'; message: string };

/** Polls GET /connections/:id/qr until linked; exported for the component tests. */
export function useQrCode(client: ApiClient, connectionId: string, refreshMs = QR_REFRESH_MS): QrState {
  const status = useConnections((s) => s.items.find((c) => c.id === connectionId)?.status);
  const [state, setState] = useState<QrState>({ kind: 'booting' });
  const last = useRef<{ value: string; version: number } | null>(null);
  const linked = status !== undefined && LINKED.has(status);

  useEffect(() => {
    if (linked) setState({ kind: 'linked' });
  }, [linked]);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const schedule = (ms: number) => {
      if (!stopped) timer = setTimeout(tick, ms);
    };
    const tick = async () => {
      try {
        const { value } = await client.qr(connectionId);
        if (stopped) return;
        if (last.current?.value !== value) last.current = { value, version: (last.current?.version ?? 0) + 1 };
        setState({ kind: 'qr', value, version: last.current.version });
        schedule(refreshMs);
      } catch (err) {
        if (stopped) return;
        if (err instanceof ApiError && err.status === 503) {
          setState({ kind: 'booting' });
          schedule(Math.min(refreshMs, (err.retryAfter ?? 2) * 1000));
        } else if (err instanceof ApiError && err.status === 409 && /already linked/i.test(err.message)) {
          setState({ kind: 'linked' });
        } else if (err instanceof ApiError && err.status === 409) {
          setState({ kind: 'needs-restart', message: err.message });
        } else {
          setState({ kind: 'error', message: errorMessage(err) });
          schedule(refreshMs * 2);
        }
      }
    };
    if (!linked) void tick();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [client, connectionId, refreshMs, linked]);

  return state;
}

export function PairingPanel({ client, connectionId, onLinked, onRestart }: { client: ApiClient; connectionId: string; onLinked: () => void; onRestart: () => void }) {
  const state = useQrCode(client, connectionId);
  const conn = useConnections((s) => s.items.find((c) => c.id === connectionId));
  const linkedOnce = useRef(false);
  const [byPhone, setByPhone] = useState(false);
  const showPhone = byPhone && (state.kind === 'qr' || state.kind === 'booting');

  useEffect(() => {
    if (state.kind === 'linked' && !linkedOnce.current) {
      linkedOnce.current = true;
      const t = setTimeout(onLinked, 1200);
      return () => clearTimeout(t);
    }
  }, [state.kind, onLinked]);

  return (
    <Stack align="center" gap="md" data-testid="pairing-panel" data-state={state.kind}>
      <Group gap="xs">
        <Text size="sm">Status:</Text>
        <StatusBadge status={conn?.status ?? 'starting'} />
      </Group>
      {showPhone && <PhoneCodeLink client={client} connectionId={connectionId} />}
      {state.kind === 'booting' && !showPhone && (
        <Center h={280} w={280}>
          <Stack align="center" gap="xs">
            <Loader />
            <Text size="sm" c="dimmed">
              Starting the session…
            </Text>
          </Stack>
        </Center>
      )}
      {state.kind === 'qr' && !showPhone && (
        <div className="qr-frame">
          <Image src={state.value} w={264} h={264} alt="QR code to link a phone" data-testid="pairing-qr" data-version={state.version} style={{ imageRendering: 'pixelated' }} />
        </div>
      )}
      {state.kind === 'linked' && (
        <Center h={280} w={280}>
          <Stack align="center" gap="xs">
            <IconCircleCheck size={64} color="var(--mantine-color-green-6)" />
            <Text fw={500}>Linked{conn?.phoneNumber ? ` as ${conn.phoneNumber}` : ''}</Text>
            <Text size="sm" c="dimmed">
              Syncing chats…
            </Text>
          </Stack>
        </Center>
      )}
      {state.kind === 'needs-restart' && (
        <Alert color="orange" title="This code can no longer be scanned">
          <Stack gap="xs" align="flex-start">
            <Text size="sm">{state.message}</Text>
            <Button size="xs" onClick={onRestart}>
              Restart to get a new code
            </Button>
          </Stack>
        </Alert>
      )}
      {state.kind === 'error' && (
        <Alert color="red" title="Could not load the QR code">
          {state.message}
        </Alert>
      )}
      {state.kind === 'qr' && (
        <Button variant="subtle" size="xs" onClick={() => setByPhone(!byPhone)} data-testid="pairing-mode-toggle">
          {byPhone ? 'Scan a QR code instead' : 'Link with phone number instead'}
        </Button>
      )}
      {state.kind !== 'linked' && !showPhone && (
        <List size="sm" type="ordered" maw={320}>
          <List.Item>Open WhatsApp on the phone</List.Item>
          <List.Item>Settings → Linked devices → Link a device</List.Item>
          <List.Item>Point the phone at this code (it refreshes by itself)</List.Item>
        </List>
      )}
    </Stack>
  );
}
