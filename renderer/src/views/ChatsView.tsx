/**
 * Chats of the selected connection: the list (unread badges, unread-only filter) beside the open thread. While the
 * filter has text the list is a search, as in WhatsApp Web: the matching chats (by name or number, answered by the
 * server) under "Chats", then the messages that contain the text (`GET /connections/:id/search`) under "Messages";
 * a message hit opens its chat at that message, highlighted (stores/jump.ts, shared with the top-bar search).
 */
import { Badge, Button, Group, Paper, ScrollArea, Stack, Switch, Text, TextInput, Title, UnstyledButton } from '@mantine/core';
import { IconMessagePlus, IconSearch } from '@tabler/icons-react';
import { useDebouncedValue, useMediaQuery } from '@mantine/hooks';
import { useEffect, useRef, useState } from 'react';
import type { Chat, SearchResult } from '../api/types.ts';
import { Snippet } from '../components/Snippet.tsx';
import { Empty, ErrorState, Loading } from '../components/StateViews.tsx';
import { useChats } from '../stores/chats.ts';
import { openAtMessage } from '../stores/jump.ts';
import { useConnections } from '../stores/connections.ts';
import { useClient } from '../stores/session.ts';
import { NewChat } from './NewChat.tsx';
import { useThread } from '../stores/thread.ts';
import { Thread } from './Thread.tsx';
import { senderName } from './MessageBubble.tsx';

/** Below this width the console shows one pane at a time. */
export const PHONE_QUERY = '(max-width: 600px)';

export function formatTime(ts: number): string {
  const d = new Date(ts * 1000);
  const today = new Date();
  return d.toDateString() === today.toDateString()
    ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString([], { month: 'short', day: 'numeric' });
}

/**
 * The line under a chat's name: its last message's text ("You: " before your own), `[kind]` for one without text, and
 * a deleted mark, without any of the text, once that message was deleted for everyone.
 */
export function ChatPreview({ last }: { last: Chat['lastMessage'] }) {
  if (last.kind === 'revoked') {
    return (
      <Text size="xs" c="dimmed" fs="italic" truncate data-testid="chat-preview" data-revoked="true">
        {last.fromMe ? 'You deleted this message' : 'This message was deleted'}
      </Text>
    );
  }
  const body = last.body || (last.kind && last.kind !== 'text' ? `[${last.kind}]` : '');
  return (
    <Text size="xs" c="dimmed" truncate data-testid="chat-preview">
      {body ? `${last.fromMe ? 'You: ' : ''}${body}` : ''}
    </Text>
  );
}

/** Message hits shown under the chat list while it is filtered. */
export const MESSAGE_HITS = 20;

/**
 * The search query for text typed in the filter: its last word matches as a prefix while it is being typed, as in
 * WhatsApp Web ("lightho" finds "lighthouse"). Text that ends in a quote, an operator or an open phrase is sent as
 * typed (the API's syntax: docs/api.md, Search).
 */
export function typedQuery(text: string): string {
  const t = text.trim();
  const openQuote = (t.match(/"/g) ?? []).length % 2 === 1;
  return !openQuote && /[\p{L}\p{N}]$/u.test(t) ? `${t}*` : t;
}

/**
 * The messages of `connectionId` that match `text` (most recent first), for the chat list's "Messages" section.
 * None for an empty text, and none (quietly: the section is simply not shown) when the API refuses the text as a
 * query (400, e.g. an unbalanced quote) or the request fails. The previous answer stays while the next one loads.
 */
function useMessageHits(connectionId: string | undefined, text: string): SearchResult[] {
  const client = useClient();
  const [answer, setAnswer] = useState<{ connectionId: string; text: string; hits: SearchResult[] } | null>(null);
  useEffect(() => {
    if (!connectionId || !text) return;
    let current = true;
    client.search(typedQuery(text), { connectionId, limit: MESSAGE_HITS }).then(
      (page) => current && setAnswer({ connectionId, text, hits: page.results }),
      () => current && setAnswer({ connectionId, text, hits: [] }),
    );
    return () => {
      current = false;
    };
  }, [client, connectionId, text]);
  return answer && text && answer.connectionId === connectionId ? answer.hits : [];
}

/** One message hit: its chat's name (and the sender: "You", or a group member), the date, the snippet. */
function MessageHit({ hit, onOpen }: { hit: SearchResult; onOpen: () => void }) {
  const m = hit.message;
  const sender = m.fromMe ? 'You: ' : m.chatId.endsWith('@g.us') ? `${senderName(m)}: ` : '';
  return (
    <UnstyledButton className="chat-item" w="100%" px="sm" py={8} onClick={onOpen} data-testid="message-hit" data-message-id={m.id}>
      <Group justify="space-between" wrap="nowrap" gap="xs">
        <Text fw={500} size="sm" truncate>
          {hit.chatName ?? m.chatId.split('@')[0]}
        </Text>
        <Text size="xs" c="dimmed" style={{ flexShrink: 0 }}>
          {formatTime(m.timestamp)}
        </Text>
      </Group>
      <Snippet text={hit.snippet} size="xs" prefix={sender} />
    </UnstyledButton>
  );
}

/** A section heading of the filtered list ("Chats", "Messages"). */
function SectionHeading({ id, children }: { id: string; children: string }) {
  return (
    <Text component="h2" id={id} size="xs" fw={700} tt="uppercase" c="dimmed" px="sm" pt="xs" pb={4} m={0}>
      {children}
    </Text>
  );
}

export function ChatsView() {
  const client = useClient();
  const connection = useConnections((s) => s.items.find((c) => c.id === s.selectedId));
  const { items, loading, loadingMore, hasMore, error, unreadOnly, openChatId, load, loadMore, setQuery, setUnreadOnly, open } = useChats();
  const [filter, setFilter] = useState('');
  const [debounced] = useDebouncedValue(filter, 250);
  const narrow = useMediaQuery(PHONE_QUERY) ?? false;
  const [newChat, setNewChat] = useState(false);
  const listViewport = useRef<HTMLDivElement>(null);
  const connectionId = connection?.id;
  const online = connection?.status === 'online';
  const text = debounced.trim();
  const messageHits = useMessageHits(connectionId, text);
  /** A message hit's chat, named by the hit while the filtered list may not hold it. */
  const [hitChat, setHitChat] = useState<{ chatId: string; name: string } | null>(null);

  useEffect(() => {
    if (connectionId) void load(client, connectionId);
  }, [client, connectionId, online, load]);

  // The filter is answered by the server over every chat, not only the pages loaded so far.
  useEffect(() => {
    if (text !== useChats.getState().query) void setQuery(client, text);
  }, [client, text, setQuery]);
  const shown = items;
  const withMessages = messageHits.length > 0;

  if (!connection) return <Empty title="No connection selected">Create and link a connection first, then pick it at the top.</Empty>;

  // Phone width: the list and the thread take turns (Back returns to the list).
  const showList = !narrow || !openChatId;
  const showThread = !narrow || !!openChatId;
  return (
    <div style={{ display: 'flex', gap: 'var(--mantine-spacing-md)', height: 'calc(100dvh - 56px - 2 * var(--mantine-spacing-md))' }}>
      <div style={{ width: narrow ? '100%' : 'clamp(220px, 30%, 360px)', flexShrink: 0, height: '100%', display: showList ? undefined : 'none' }}>
        <Paper withBorder h="100%" style={{ display: 'flex', flexDirection: 'column' }}>
          <Stack gap="xs" p="sm">
            <Group justify="space-between" wrap="nowrap">
              <Title order={1} size="h4">
                Chats
              </Title>
              <Button size="compact-sm" variant="light" leftSection={<IconMessagePlus size={14} />} onClick={() => setNewChat(true)} disabled={!online} data-testid="new-chat">
                New chat
              </Button>
            </Group>
            <TextInput size="xs" placeholder="Search chats and messages" leftSection={<IconSearch size={14} />} value={filter} onChange={(e) => setFilter(e.currentTarget.value)} aria-label="Filter chats" />
            <Switch size="xs" label="Unread only" checked={unreadOnly} onChange={(e) => void setUnreadOnly(client, e.currentTarget.checked)} data-testid="unread-only" />
          </Stack>
          <ScrollArea
            style={{ flex: 1 }}
            viewportRef={listViewport}
            onScrollPositionChange={({ y }) => {
              // Near the end of what is loaded: fetch the next page (loadMore ignores repeats while one loads).
              const el = listViewport.current;
              if (el && y + el.clientHeight >= el.scrollHeight - 300) void loadMore(client);
            }}
            data-testid="chat-list-scroll"
          >
            {withMessages && <SectionHeading id="chat-list-chats">Chats</SectionHeading>}
            {error && <ErrorState message={error} onRetry={() => void load(client, connection.id)} />}
            {loading && items.length === 0 && <Loading />}
            {!loading && !error && shown.length === 0 && withMessages && (
              <Text size="xs" c="dimmed" px="sm" pb="xs" data-testid="no-chats-match">
                No chat's name or number contains “{text}”.
              </Text>
            )}
            {!loading && !error && shown.length === 0 && !withMessages && (
              <Empty title={text ? 'No chats match' : unreadOnly ? 'No unread chats' : 'No chats yet'}>
                {text
                  ? `No chat's name or number contains “${text}”.`
                  : connection.status === 'online'
                    ? 'Chats appear when messages arrive.'
                    : 'The connection is not online yet.'}
              </Empty>
            )}
            <nav {...(withMessages ? { 'aria-labelledby': 'chat-list-chats' } : { 'aria-label': 'Chats' })}>
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
                      {c.lastMessage?.timestamp ? formatTime(c.lastMessage.timestamp) : ''}
                    </Text>
                  </Group>
                  <Group justify="space-between" wrap="nowrap" gap="xs">
                    <ChatPreview last={c.lastMessage} />
                    {c.unread > 0 && (
                      <Badge size="sm" circle color="teal" data-testid="unread-badge" aria-label={`${c.unread} unread`}>
                        {c.unread}
                      </Badge>
                    )}
                  </Group>
                </UnstyledButton>
              ))}
            </nav>
            {(loadingMore || hasMore) && (
              <Group justify="center" py="xs">
                <Button size="compact-xs" variant="subtle" loading={loadingMore} onClick={() => void loadMore(client)} data-testid="more-chats">
                  More chats
                </Button>
              </Group>
            )}
            {withMessages && (
              <>
                <SectionHeading id="chat-list-messages">Messages</SectionHeading>
                <nav aria-labelledby="chat-list-messages" data-testid="message-hits">
                  {messageHits.map((h) => (
                    <MessageHit
                      key={h.message.id}
                      hit={h}
                      onOpen={() => {
                        setHitChat({ chatId: h.message.chatId, name: h.chatName ?? h.message.chatId });
                        openAtMessage(client, connection.id, h.message.chatId, h.message.id);
                      }}
                    />
                  ))}
                </nav>
              </>
            )}
          </ScrollArea>
        </Paper>
      </div>
      <div style={{ flex: 1, minWidth: 0, height: '100%', display: showThread ? undefined : 'none' }}>
        <Paper withBorder h="100%" style={{ display: 'flex', flexDirection: 'column', overflow: 'hidden' }}>
          {openChatId ? (
            <Thread
              connectionId={connection.id}
              chatId={openChatId}
              chatName={items.find((c) => c.id === openChatId)?.name ?? (hitChat?.chatId === openChatId ? hitChat.name : openChatId)}
              online={connection.status === 'online'}
              {...(narrow && { onBack: () => open(null) })}
            />
          ) : (
            <Empty title="Pick a chat">Its messages appear here, newest at the bottom.</Empty>
          )}
        </Paper>
      </div>
      <NewChat connectionId={connection.id} opened={newChat} onClose={() => setNewChat(false)} onOpen={(chatId) => open(chatId)} />
    </div>
  );
}
