/** Webhooks of the selected connection: list, create, edit, pause/resume, delete, secret, logs, test, retry. */
import { ActionIcon, Badge, Button, Code, CopyButton, Group, Modal, MultiSelect, Paper, Stack, Switch, Table, Text, TextInput, Title, Tooltip, VisuallyHidden } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { IconCheck, IconCopy, IconList, IconPencil, IconPlus, IconRefresh, IconSend, IconTrash } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { errorMessage } from '../api/client.ts';
import { EVENT_TYPES, type Webhook, type WebhookDelivery } from '../api/types.ts';
import { Empty, ErrorState, Loading } from '../components/StateViews.tsx';
import { useAsync } from '../hooks.ts';
import { useConnections } from '../stores/connections.ts';
import { useClient } from '../stores/session.ts';

const fail = (what: string) => (err: unknown) => notifications.show({ color: 'red', title: `${what} failed`, message: errorMessage(err) });

export function CopyValue({ value, label }: { value: string; label: string }) {
  return (
    <CopyButton value={value}>
      {({ copied, copy }) => (
        <Tooltip label={copied ? 'Copied' : `Copy ${label}`}>
          <ActionIcon variant="subtle" onClick={copy} aria-label={`Copy ${label}`}>
            {copied ? <IconCheck size={14} /> : <IconCopy size={14} />}
          </ActionIcon>
        </Tooltip>
      )}
    </CopyButton>
  );
}

/** How often the list (and each active webhook's latest outcome) is fetched again while the view is open. */
export const WEBHOOKS_REFRESH_MS = 5_000;

/**
 * The newest delivery of a log (newest first) that has an outcome: delivered, failed, or pending after a failed
 * attempt (`lastError` set). A first attempt still in flight, a held (`paused`) or a `skipped` row says nothing
 * about the consumer's health and is passed over; so is a failure by `410 Gone`, which the Disabled state tells
 * (once the operator re-enabled the webhook it no longer counts).
 */
export function latestOutcome(log: readonly WebhookDelivery[]): WebhookDelivery | undefined {
  return log.find(
    (d) => d.status === 'delivered' || (d.status === 'failed' && d.lastStatusCode !== 410) || (d.status === 'pending' && d.lastError !== null),
  );
}

export type WebhookStateName = 'active' | 'failing' | 'paused' | 'disabled';

/**
 * What a webhook's state is, told apart: paused by the operator; disabled by the service (410, with its reason);
 * failing — active, but its latest outcome (`latest`, the latestOutcome of its log) is not a delivery: one that gave
 * up or waits to be retried after a failed attempt; else active.
 */
export function webhookState(w: Webhook, latest?: WebhookDelivery): WebhookStateName {
  if (!w.active) return w.disabledReason ? 'disabled' : 'paused';
  return latest && latest.status !== 'delivered' ? 'failing' : 'active';
}

/** Badge colours of the webhook states: each its own. */
export const STATE_COLORS: Record<WebhookStateName, string> = { active: 'green', failing: 'orange', paused: 'gray', disabled: 'red' };

/** "HTTP 500, retrying (2 attempts)" / "HTTP 500, gave up after 5 attempts": why a failing webhook is failing. */
export function failingReason(d: WebhookDelivery): string {
  const why = d.lastError ?? (d.lastStatusCode === null ? 'error' : `HTTP ${d.lastStatusCode}`);
  const n = `${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`;
  return d.status === 'failed' ? `${why}, gave up after ${n}` : `${why}, retrying (${n})`;
}

function WebhookState({ webhook: w, latest, onToggle }: { webhook: Webhook; latest: WebhookDelivery | undefined; onToggle: () => void }) {
  const state = webhookState(w, latest);
  return (
    <Group gap="xs" wrap="nowrap" data-testid="webhook-state" data-state={state}>
      {state === 'disabled' ? (
        <>
          <Tooltip label={w.disabledReason}>
            <Badge color={STATE_COLORS.disabled} variant="light" data-testid="webhook-state-badge">
              Disabled
              <VisuallyHidden>: {w.disabledReason}</VisuallyHidden>
            </Badge>
          </Tooltip>
          <Button size="compact-xs" variant="light" onClick={onToggle} data-testid="webhook-reenable">
            Re-enable
          </Button>
        </>
      ) : (
        <>
          <Switch checked={w.active} onChange={onToggle} aria-label={w.active ? 'Pause deliveries' : 'Resume deliveries'} />
          {state === 'failing' && latest ? (
            <Tooltip label={`Latest delivery: ${failingReason(latest)}`}>
              <Badge color={STATE_COLORS.failing} variant="light" data-testid="webhook-state-badge">
                Failing
                <VisuallyHidden>: latest delivery {failingReason(latest)}</VisuallyHidden>
              </Badge>
            </Tooltip>
          ) : (
            <Badge color={STATE_COLORS[state]} variant="light" data-testid="webhook-state-badge">
              {state === 'active' ? 'Active' : 'Paused'}
            </Badge>
          )}
        </>
      )}
    </Group>
  );
}

/** Colours of delivery states: each its own. */
export const DELIVERY_COLORS: Record<string, string> = {
  delivered: 'green',
  failed: 'red',
  pending: 'yellow',
  delivering: 'blue',
  paused: 'grape',
  skipped: 'gray',
};

/** Every documented event, plus `*` (all, including event types added later). */
export const EVENT_CHOICES = [{ value: '*', label: '* (every event, also future ones)' }, ...EVENT_TYPES.map((e) => ({ value: e, label: e }))];

export function WebhooksView() {
  const client = useClient();
  const connection = useConnections((s) => s.items.find((c) => c.id === s.selectedId));
  const cid = connection?.id;
  const list = useAsync(() => (cid ? client.webhooks(cid) : Promise.resolve([])), [client, cid]);
  // The latest outcome of each active webhook (for "failing"), fetched again with the list.
  const outcomes = useAsync(async () => {
    const active = (list.data ?? []).filter((w) => w.active);
    return new Map(await Promise.all(active.map(async (w) => [w.id, latestOutcome(await client.webhookLogs(w.id))] as const)));
  }, [client, list.data]);
  const reloadList = list.reload;
  useEffect(() => {
    const timer = setInterval(() => void reloadList(), WEBHOOKS_REFRESH_MS);
    return () => clearInterval(timer);
  }, [reloadList]);
  const [editing, setEditing] = useState<Webhook | 'new' | null>(null);
  const [logsOf, setLogsOf] = useState<Webhook | null>(null);
  const [deleting, setDeleting] = useState<Webhook | null>(null);

  if (!connection) return <Empty title="No connection selected">Webhooks belong to a connection: pick one at the top.</Empty>;

  const toggle = (w: Webhook) => client.updateWebhook(w.id, { active: !w.active }).then(() => list.reload(), fail('Update'));
  const test = (w: Webhook) =>
    client.testWebhook(w.id).then(() => notifications.show({ message: 'Test event queued; see the delivery log.' }), fail('Test'));

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h3">Webhooks</Title>
        <Button leftSection={<IconPlus size={16} />} onClick={() => setEditing('new')} data-testid="new-webhook">
          New webhook
        </Button>
      </Group>
      {list.error && <ErrorState message={list.error} onRetry={() => void list.reload()} />}
      {list.loading && !list.data && <Loading />}
      {list.data?.length === 0 && <Empty title="No webhooks">Events of this connection can be POSTed to your URL, signed with a per-webhook secret.</Empty>}
      {list.data && list.data.length > 0 && (
        <Table.ScrollContainer minWidth={720}>
          <Table verticalSpacing="sm" data-testid="webhooks-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>URL</Table.Th>
                <Table.Th>Events</Table.Th>
                <Table.Th>Secret</Table.Th>
                <Table.Th>State</Table.Th>
                <Table.Th aria-label="Actions" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {list.data.map((w) => (
                <Table.Tr key={w.id} data-testid="webhook-row">
                  <Table.Td className="mono">{w.url}</Table.Td>
                  <Table.Td>
                    <Group gap={4}>
                      {w.events.map((e) => (
                        <Badge key={e} size="xs" variant="light">
                          {e}
                        </Badge>
                      ))}
                    </Group>
                  </Table.Td>
                  <Table.Td>
                    <Group gap={4} wrap="nowrap">
                      <Code>{w.signingSecret.slice(0, 10)}…</Code>
                      <CopyValue value={w.signingSecret} label="signing secret" />
                    </Group>
                  </Table.Td>
                  <Table.Td>
                    <WebhookState webhook={w} latest={outcomes.data?.get(w.id)} onToggle={() => void toggle(w)} />
                  </Table.Td>
                  <Table.Td>
                    <Group gap={4} justify="flex-end" wrap="nowrap">
                      <Tooltip label="Send a test event">
                        <ActionIcon variant="subtle" onClick={() => void test(w)} aria-label="Send test event" data-testid="webhook-test">
                          <IconSend size={16} />
                        </ActionIcon>
                      </Tooltip>
                      <Tooltip label="Delivery log">
                        <ActionIcon variant="subtle" onClick={() => setLogsOf(w)} aria-label="Delivery log" data-testid="webhook-logs">
                          <IconList size={16} />
                        </ActionIcon>
                      </Tooltip>
                      <Tooltip label="Edit">
                        <ActionIcon variant="subtle" onClick={() => setEditing(w)} aria-label="Edit webhook">
                          <IconPencil size={16} />
                        </ActionIcon>
                      </Tooltip>
                      <Tooltip label="Delete">
                        <ActionIcon variant="subtle" color="red" onClick={() => setDeleting(w)} aria-label="Delete webhook">
                          <IconTrash size={16} />
                        </ActionIcon>
                      </Tooltip>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
      {editing && (
        <WebhookForm
          connectionId={connection.id}
          webhook={editing === 'new' ? null : editing}
          onClose={() => setEditing(null)}
          onSaved={() => {
            setEditing(null);
            void list.reload();
          }}
        />
      )}
      <Modal opened={logsOf !== null} onClose={() => setLogsOf(null)} title="Delivery log" size="xl">
        {logsOf && <DeliveryLog webhook={logsOf} />}
      </Modal>
      <Modal opened={deleting !== null} onClose={() => setDeleting(null)} title="Delete webhook?" centered>
        <Stack>
          <Text size="sm">Deliveries to {deleting?.url} stop for good. This cannot be undone.</Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setDeleting(null)}>
              Cancel
            </Button>
            <Button
              color="red"
              onClick={() =>
                deleting &&
                void client.deleteWebhook(deleting.id).then(() => {
                  setDeleting(null);
                  void list.reload();
                }, fail('Delete'))
              }
            >
              Delete
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}

function WebhookForm({ connectionId, webhook, onClose, onSaved }: { connectionId: string; webhook: Webhook | null; onClose: () => void; onSaved: () => void }) {
  const client = useClient();
  const [url, setUrl] = useState(webhook?.url ?? '');
  const [events, setEvents] = useState<string[]>(webhook?.events ?? ['message']);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [created, setCreated] = useState<Webhook | null>(null);
  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      if (webhook) {
        await client.updateWebhook(webhook.id, { url, events });
        onSaved();
      } else {
        setCreated(await client.createWebhook(connectionId, { url, events }));
      }
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal opened onClose={created ? onSaved : onClose} title={webhook ? 'Edit webhook' : 'New webhook'} centered>
      {created ? (
        <Stack>
          <Text size="sm">Webhook created. Verify deliveries with this signing secret (Standard Webhooks):</Text>
          <Group gap={4} wrap="nowrap">
            <Code block style={{ flex: 1 }} data-testid="webhook-secret">
              {created.signingSecret}
            </Code>
            <CopyValue value={created.signingSecret} label="signing secret" />
          </Group>
          <Group justify="flex-end">
            <Button onClick={onSaved}>Done</Button>
          </Group>
        </Stack>
      ) : (
        <Stack>
          <TextInput label="URL" placeholder="https://example.com/hooks/whatsapp" value={url} onChange={(e) => setUrl(e.currentTarget.value)} data-testid="webhook-url" />
          <MultiSelect
            label="Events"
            data={EVENT_CHOICES}
            value={events}
            onChange={(v) => setEvents(v.includes('*') && !events.includes('*') ? ['*'] : v.length > 1 ? v.filter((e) => e !== '*') : v)}
            searchable
            data-testid="webhook-events"
          />
          {error && <Text c="red" size="sm" role="alert">{error}</Text>}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button onClick={() => void save()} loading={busy} disabled={!url || events.length === 0} data-testid="webhook-save">
              {webhook ? 'Save' : 'Create'}
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}

function DeliveryLog({ webhook }: { webhook: Webhook }) {
  const client = useClient();
  const logs = useAsync(() => client.webhookLogs(webhook.id), [client, webhook.id]);
  const [open, setOpen] = useState<string | null>(null);
  const retry = (id: string) =>
    client.retryDelivery(webhook.id, id).then(() => {
      notifications.show({ message: 'Delivery queued again' });
      void logs.reload();
    }, fail('Retry'));
  return (
    <Stack>
      <Group justify="space-between">
        <Text size="sm" c="dimmed" className="mono">
          {webhook.url}
        </Text>
        <Button size="xs" variant="default" leftSection={<IconRefresh size={14} />} onClick={() => void logs.reload()}>
          Refresh
        </Button>
      </Group>
      {logs.error && <ErrorState message={logs.error} onRetry={() => void logs.reload()} />}
      {logs.loading && !logs.data && <Loading />}
      {logs.data?.length === 0 && <Empty title="No deliveries yet">Send a test event to see one.</Empty>}
      {logs.data?.map((d) => (
        <Paper key={d.id} withBorder p="xs" data-testid="delivery-row" data-status={d.status}>
          <Group justify="space-between" wrap="nowrap">
            <Group gap="xs">
              <Badge color={DELIVERY_COLORS[d.status] ?? 'gray'} variant="light" data-testid="delivery-status">
                {d.status}
              </Badge>
              <Text size="sm" fw={500}>
                {d.eventType}
              </Text>
              <Text size="xs" c="dimmed">
                {d.attempts} attempt{d.attempts === 1 ? '' : 's'} · {new Date(d.createdAt).toLocaleString()}
              </Text>
            </Group>
            <Group gap={4}>
              <Button size="compact-xs" variant="subtle" onClick={() => setOpen(open === d.id ? null : d.id)}>
                {open === d.id ? 'Hide' : 'Payload'}
              </Button>
              {(d.status === 'failed' || d.status === 'pending') && (
                <Button size="compact-xs" variant="light" onClick={() => void retry(d.id)} data-testid="delivery-retry">
                  Retry now
                </Button>
              )}
            </Group>
          </Group>
          {d.lastError && (
            <Text size="xs" c="red" mt={4}>
              {d.lastError}
            </Text>
          )}
          {open === d.id && (
            <Code block mt="xs">
              {JSON.stringify(d.payload, null, 2)}
            </Code>
          )}
        </Paper>
      ))}
    </Stack>
  );
}
