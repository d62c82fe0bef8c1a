/** Connections: list with live status, new (get-or-create) + pairing, rename, restart, delete, profile. */
import { ActionIcon, Button, Group, Menu, Modal, SegmentedControl, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { IconDots, IconMessages, IconPencil, IconPlus, IconQrcode, IconRefresh, IconTrash, IconUser } from '@tabler/icons-react';
import { useCallback, useState, type FormEvent } from 'react';
import { errorMessage } from '../api/client.ts';
import type { Connection, Profile } from '../api/types.ts';
import { connectionLabel } from '../components/ConnectionPicker.tsx';
import { Empty, ErrorState, Loading } from '../components/StateViews.tsx';
import { StatusBadge } from '../components/StatusBadge.tsx';
import { useConnections } from '../stores/connections.ts';
import { useNav } from '../stores/nav.ts';
import { useClient } from '../stores/session.ts';
import { DeletedConnections } from './DeletedConnections.tsx';
import { PairingPanel } from './PairingPanel.tsx';

const PAIRABLE = new Set(['starting', 'scan_qr']);

function notifyError(err: unknown) {
  notifications.show({ color: 'red', title: 'Request failed', message: errorMessage(err) });
}

export function ConnectionsView() {
  const client = useClient();
  const { items, loading, loaded, error, load, track, select } = useConnections();
  const go = useNav((s) => s.go);
  const [pairing, setPairing] = useState<string | null>(null);
  const [renaming, setRenaming] = useState<Connection | null>(null);
  const [deleting, setDeleting] = useState<Connection | null>(null);
  const [profile, setProfile] = useState<{ c: Connection; p?: Profile; error?: string } | null>(null);
  const [creating, setCreating] = useState(false);
  /** Which connections are listed: the live ones, or the deleted ones (read-only). */
  const [filter, setFilter] = useState<'active' | 'deleted'>('active');

  const create = async () => {
    setCreating(true);
    try {
      const c = await track(client.getOrCreateConnection());
      setPairing(c.id);
    } catch (err) {
      notifyError(err);
    } finally {
      setCreating(false);
    }
  };

  const restart = async (c: Connection) => {
    try {
      await track(client.restartConnection(c.id));
      notifications.show({ message: `Restarting ${connectionLabel(c)}` });
    } catch (err) {
      notifyError(err);
    }
  };

  const showProfile = async (c: Connection) => {
    setProfile({ c });
    try {
      setProfile({ c, p: await client.me(c.id) });
    } catch (err) {
      setProfile({ c, error: errorMessage(err) });
    }
  };

  const onLinked = useCallback(() => {
    if (pairing) select(pairing);
    setPairing(null);
    notifications.show({ color: 'green', title: 'Phone linked', message: 'The connection is syncing its chats.' });
  }, [pairing, select]);

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h3">Connections</Title>
        <Button leftSection={<IconPlus size={16} />} onClick={create} loading={creating} data-testid="new-connection">
          New connection
        </Button>
      </Group>
      <SegmentedControl
        size="xs"
        w="fit-content"
        value={filter}
        onChange={(v) => setFilter(v as 'active' | 'deleted')}
        data={[
          { value: 'active', label: 'Active' },
          { value: 'deleted', label: 'Deleted' },
        ]}
        aria-label="Show connections"
        data-testid="connections-filter"
      />
      {filter === 'deleted' && <DeletedConnections />}
      {filter === 'active' && error && <ErrorState message={error} onRetry={() => void load(client)} />}
      {filter === 'active' && !loaded && loading && <Loading />}
      {filter === 'active' && loaded && !error && items.length === 0 && (
        <Empty title="No connections yet">Create one and scan its QR code with the phone to link a WhatsApp account.</Empty>
      )}
      {filter === 'active' && items.length > 0 && (
        <Table.ScrollContainer minWidth={640}>
          <Table verticalSpacing="sm" highlightOnHover data-testid="connections-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Phone</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Created</Table.Th>
                <Table.Th aria-label="Actions" />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {items.map((c) => (
                <Table.Tr key={c.id} data-testid="connection-row" data-id={c.id}>
                  <Table.Td>
                    <Text fw={500}>{c.name ?? <Text span c="dimmed">Unnamed</Text>}</Text>
                    <Text size="xs" c="dimmed" className="mono">
                      {c.sessionName}
                    </Text>
                  </Table.Td>
                  <Table.Td>{c.phoneNumber ?? '—'}</Table.Td>
                  <Table.Td>
                    <StatusBadge status={c.status} />
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{new Date(c.createdAt).toLocaleString()}</Text>
                  </Table.Td>
                  <Table.Td>
                    <Group gap="xs" justify="flex-end" wrap="nowrap">
                      {PAIRABLE.has(c.status) && (
                        <Button size="xs" variant="light" leftSection={<IconQrcode size={14} />} onClick={() => setPairing(c.id)}>
                          Pair
                        </Button>
                      )}
                      {(c.status === 'online' || c.status === 'connected') && (
                        <Button
                          size="xs"
                          variant="light"
                          leftSection={<IconMessages size={14} />}
                          onClick={() => {
                            select(c.id);
                            go('chats');
                          }}
                        >
                          Chats
                        </Button>
                      )}
                      <Menu position="bottom-end" withinPortal>
                        <Menu.Target>
                          <ActionIcon variant="subtle" aria-label={`Actions for ${connectionLabel(c)}`}>
                            <IconDots size={16} />
                          </ActionIcon>
                        </Menu.Target>
                        <Menu.Dropdown>
                          <Menu.Item leftSection={<IconPencil size={14} />} onClick={() => setRenaming(c)}>
                            Rename
                          </Menu.Item>
                          <Menu.Item leftSection={<IconUser size={14} />} disabled={c.status !== 'online'} onClick={() => void showProfile(c)}>
                            Profile
                          </Menu.Item>
                          <Menu.Item leftSection={<IconRefresh size={14} />} onClick={() => void restart(c)}>
                            Restart
                          </Menu.Item>
                          <Menu.Divider />
                          <Menu.Item color="red" leftSection={<IconTrash size={14} />} onClick={() => setDeleting(c)}>
                            Delete
                          </Menu.Item>
                        </Menu.Dropdown>
                      </Menu>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}

      <Modal opened={pairing !== null} onClose={() => setPairing(null)} title="Link a phone" centered size="auto">
        {pairing && (
          <PairingPanel
            client={client}
            connectionId={pairing}
            onLinked={onLinked}
            onRestart={() => {
              const c = items.find((x) => x.id === pairing);
              if (c) void restart(c);
            }}
          />
        )}
      </Modal>

      <RenameModal connection={renaming} onClose={() => setRenaming(null)} />

      <Modal opened={deleting !== null} onClose={() => setDeleting(null)} title="Delete connection?" centered>
        {deleting && (
          <DeleteConfirm
            connection={deleting}
            onDone={() => setDeleting(null)}
          />
        )}
      </Modal>

      <Modal opened={profile !== null} onClose={() => setProfile(null)} title="Profile" centered>
        {profile && !profile.p && !profile.error && <Loading />}
        {profile?.error && <ErrorState message={profile.error} />}
        {profile?.p && (
          <Stack gap={4} data-testid="profile">
            <Text fw={600}>{profile.p.pushName}</Text>
            <Text size="sm" className="mono">
              {profile.p.id}
            </Text>
            <Text size="sm" c="dimmed">
              {profile.c.phoneNumber}
            </Text>
          </Stack>
        )}
      </Modal>
    </Stack>
  );
}

function RenameModal({ connection, onClose }: { connection: Connection | null; onClose: () => void }) {
  const client = useClient();
  const track = useConnections((s) => s.track);
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [key, setKey] = useState<string | null>(null);
  if (connection && key !== connection.id) {
    setKey(connection.id);
    setName(connection.name ?? '');
  }
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!connection) return;
    setBusy(true);
    try {
      await track(client.renameConnection(connection.id, name.trim() || null));
      setKey(null);
      onClose();
    } catch (err) {
      notifyError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal
      opened={connection !== null}
      onClose={() => {
        setKey(null);
        onClose();
      }}
      title="Rename connection"
      centered
    >
      <form onSubmit={submit}>
        <Stack>
          <TextInput label="Name" value={name} maxLength={100} onChange={(e) => setName(e.currentTarget.value)} data-autofocus description="Leave empty to remove the name" />
          <Group justify="flex-end">
            <Button type="submit" loading={busy}>
              Save
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

function DeleteConfirm({ connection, onDone }: { connection: Connection; onDone: () => void }) {
  const client = useClient();
  const remove = useConnections((s) => s.remove);
  const [busy, setBusy] = useState(false);
  const confirm = async () => {
    setBusy(true);
    try {
      await client.deleteConnection(connection.id);
      remove(connection.id);
      notifications.show({ message: `Deleted ${connectionLabel(connection)}` });
      onDone();
    } catch (err) {
      notifyError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Stack>
      <Text size="sm">
        <b>{connectionLabel(connection)}</b> will be unlinked from the phone and its session closed. Its record stays readable
        under <b>Deleted</b>, but it can no longer send or receive. This cannot be undone.
      </Text>
      <Group justify="flex-end">
        <Button variant="default" onClick={onDone}>
          Cancel
        </Button>
        <Button color="red" onClick={confirm} loading={busy} data-testid="confirm-delete">
          Delete
        </Button>
      </Group>
    </Stack>
  );
}
