/** API tokens: list, create (the value is shown once, with copy), revoke with confirmation. */
import { Alert, Button, Code, Group, Modal, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { IconPlus } from '@tabler/icons-react';
import { useState } from 'react';
import { errorMessage } from '../api/client.ts';
import type { ApiToken } from '../api/types.ts';
import { Empty, ErrorState, Loading } from '../components/StateViews.tsx';
import { useAsync } from '../hooks.ts';
import { useClient } from '../stores/session.ts';
import { CopyValue } from './WebhooksView.tsx';

export function TokensView() {
  const client = useClient();
  const list = useAsync(() => client.tokens(), [client]);
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const [revoking, setRevoking] = useState<ApiToken | null>(null);
  const [busy, setBusy] = useState(false);

  const create = async () => {
    setBusy(true);
    try {
      const t = await client.createToken(name.trim() || 'console');
      setCreated(t.token);
      setName('');
      void list.reload();
    } catch (err) {
      notifications.show({ color: 'red', title: 'Create failed', message: errorMessage(err) });
    } finally {
      setBusy(false);
    }
  };
  const revoke = async (t: ApiToken) => {
    try {
      await client.revokeToken(t.id);
      setRevoking(null);
      void list.reload();
    } catch (err) {
      notifications.show({ color: 'red', title: 'Revoke failed', message: errorMessage(err) });
    }
  };
  const isCurrent = (t: ApiToken) => !!t.prefix && client.token.startsWith(t.prefix);

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h3">API tokens</Title>
        <Button leftSection={<IconPlus size={16} />} onClick={() => setCreating(true)} data-testid="new-token">
          New token
        </Button>
      </Group>
      {list.error && <ErrorState message={list.error} onRetry={() => void list.reload()} />}
      {list.loading && !list.data && <Loading />}
      {list.data?.length === 0 && <Empty title="No tokens" />}
      {list.data && list.data.length > 0 && (
        <Table data-testid="tokens-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Prefix</Table.Th>
              <Table.Th>Created</Table.Th>
              <Table.Th>Last used</Table.Th>
              <Table.Th aria-label="Actions" />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {list.data.map((t) => (
              <Table.Tr key={t.id} data-testid="token-row" data-name={t.name ?? ''}>
                <Table.Td>
                  {t.name ?? '—'} {isCurrent(t) && <Text span size="xs" c="dimmed">(this console)</Text>}
                </Table.Td>
                <Table.Td className="mono">{t.prefix ? `${t.prefix}…` : '—'}</Table.Td>
                <Table.Td>{t.createdAt ? new Date(t.createdAt).toLocaleString() : '—'}</Table.Td>
                <Table.Td>{t.lastUsedAt ? new Date(t.lastUsedAt).toLocaleString() : 'never'}</Table.Td>
                <Table.Td>
                  <Button size="compact-xs" color="red" variant="light" onClick={() => setRevoking(t)} data-testid="revoke-token">
                    Revoke
                  </Button>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      <Modal
        opened={creating}
        onClose={() => {
          setCreating(false);
          setCreated(null);
        }}
        title="New API token"
        centered
      >
        {created ? (
          <Stack>
            <Alert color="yellow">Copy it now: it is shown only once.</Alert>
            <Group gap={4} wrap="nowrap">
              <Code block style={{ flex: 1, wordBreak: 'break-all' }} data-testid="created-token">
                {created}
              </Code>
              <CopyValue value={created} label="token" />
            </Group>
            <Group justify="flex-end">
              <Button
                onClick={() => {
                  setCreating(false);
                  setCreated(null);
                }}
              >
                Done
              </Button>
            </Group>
          </Stack>
        ) : (
          <Stack>
            <TextInput label="Name" placeholder="e.g. CRM integration" value={name} onChange={(e) => setName(e.currentTarget.value)} data-testid="token-name" data-autofocus />
            <Group justify="flex-end">
              <Button onClick={() => void create()} loading={busy} data-testid="token-create">
                Create
              </Button>
            </Group>
          </Stack>
        )}
      </Modal>
      <Modal opened={revoking !== null} onClose={() => setRevoking(null)} title="Revoke token?" centered>
        <Stack>
          <Text size="sm">
            Anything using <b>{revoking?.name ?? revoking?.id}</b> loses access at once.
            {revoking && isCurrent(revoking) && ' This is the token this console uses: you will be signed out.'}
          </Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setRevoking(null)}>
              Cancel
            </Button>
            <Button color="red" onClick={() => revoking && void revoke(revoking)} data-testid="confirm-revoke">
              Revoke
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}
