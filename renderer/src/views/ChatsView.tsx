/** Chats of the selected connection: the list (unread badges, unread-only filter) beside the open thread. */
import { Badge, Group, Paper, ScrollArea, Stack, Switch, Text, TextInput, Title, UnstyledButton } from '@mantine/core';
import { IconSearch } from '@tabler/icons-react';
import { useEffect, useMemo, useState } from 'react';
import { Empty, ErrorState, Loading } from '../components/StateViews.tsx';
import { useChats } from '../stores/chats.ts';
import { useConnections } from '../stores/connections.ts';
import { useClient } from '../stores/session.ts';
import { useThread } from '../stores/thread.ts';
import { Thread } from './Thread.tsx';

export function formatTime(ts: number): string {
  const d = new Date(ts * 1000);
  const today = new Date();
  return d.toDateString() === today.toDateString()
    ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString([], { month: 'short', day: 'numeric' });
}

export function ChatsView() {
  const client = useClient();
  const connection = useConnections((s) => s.items.find((c) => c.id === s.selectedId));
  const { items, loading, error, unreadOnly, openChatId, load, setUnreadOnly, open } = useChats();
  const [filter, setFilter] = useState('');
  const connectionId = connection?.id;
  const online = connection?.status === 'online';

  useEffect(() => {
    if (connectionId) void load(client, connectionId);
  }, [client, connectionId, online, load]);

  const shown = useMemo(() => {
    const f = filter.trim().toLowerCase();
    return f ? items.filter((c) => c.name.toLowerCase().includes(f) || c.id.includes(f)) : items;
  }, [items, filter]);

  if (!connection) return <Empty title="No connection selected">Create and link a connection first, then pick it at the top.</Empty>;

  return (
    <div style={{ display: 'flex', gap: 'var(--mantine-spacing-md)', height: 'calc(100vh - 56px - 2 * var(--mantine-spacing-md))' }}>
      <div style={{ width: 'clamp(220px, 30%, 360px)', flexShrink: 0, height: '100%' }}>
        <Paper withBorder h="100%" style={{ display: 'flex', flexDirection: 'column' }}>
          <Stack gap="xs" p="sm">
            <Title order={4}>Chats</Title>
            <TextInput size="xs" placeholder="Filter by name" leftSection={<IconSearch size={14} />} value={filter} onChange={(e) => setFilter(e.currentTarget.value)} aria-label="Filter chats" />
            <Switch size="xs" label="Unread only" checked={unreadOnly} onChange={(e) => void setUnreadOnly(client, e.currentTarget.checked)} data-testid="unread-only" />
          </Stack>
          <ScrollArea style={{ flex: 1 }}>
            {error && <ErrorState message={error} onRetry={() => void load(client, connection.id)} />}
            {loading && items.length === 0 && <Loading />}
            {!loading && !error && shown.length === 0 && (
              <Empty title={unreadOnly ? 'No unread chats' : 'No chats yet'}>
                {connection.status === 'online' ? 'Chats appear when messages arrive.' : 'The connection is not online yet.'}
              </Empty>
            )}
            <nav aria-label="Chats">
              {shown.map((c) => (
                <UnstyledButton
                  key={c.id}
                  className="chat-item"
                  data-active={c.id === openChatId}
                  data-testid="chat-item"
                  data-chat-id={c.id}
                  onClick={() => {
                    useThread.setState({ jump: null }); // a chat picked from the list opens at its newest messages
                    open(c.id);
                  }}
                  w="100%"
                  px="sm"
                  py={8}
                  aria-current={c.id === openChatId ? 'true' : undefined}
                >
                  <Group justify="space-between" wrap="nowrap" gap="xs">
                    <Text fw={c.unread ? 700 : 500} size="sm" truncate>
                      {c.name}
                    </Text>
                    <Text size="xs" c="dimmed" style={{ flexShrink: 0 }}>
                      {c.lastMessage ? formatTime(c.lastMessage.timestamp) : ''}
                    </Text>
                  </Group>
                  <Group justify="space-between" wrap="nowrap" gap="xs">
                    <Text size="xs" c="dimmed" truncate>
                      {c.lastMessage ? `${c.lastMessage.fromMe ? 'You: ' : ''}${c.lastMessage.body}` : ''}
                    </Text>
                    {c.unread > 0 && (
                      <Badge size="sm" circle color="teal" data-testid="unread-badge" aria-label={`${c.unread} unread`}>
                        {c.unread}
                      </Badge>
                    )}
                  </Group>
                </UnstyledButton>
              ))}
            </nav>
          </ScrollArea>
        </Paper>
      </div>
      <div style={{ flex: 1, minWidth: 0, height: '100%' }}>
        <Paper withBorder h="100%" style={{ display: 'flex', flexDirection: 'column', overflow: 'hidden' }}>
          {openChatId ? (
            <Thread connectionId={connection.id} chatId={openChatId} chatName={items.find((c) => c.id === openChatId)?.name ?? openChatId} online={connection.status === 'online'} />
          ) : (
            <Empty title="Pick a chat">Its messages appear here, newest at the bottom.</Empty>
          )}
        </Paper>
      </div>
    </div>
  );
}
