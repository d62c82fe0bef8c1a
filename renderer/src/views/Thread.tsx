/**
 * One chat: messages oldest → newest, older pages loaded when scrolled to the top (scroll position kept), a
 * "history starts here" marker once `nextBefore` is null, read receipt on open, and the composer.
 */
import { ActionIcon, Badge, Button, Center, Divider, Group, Loader, Menu, Stack, Text } from '@mantine/core';
import { IconArrowLeft, IconDotsVertical, IconDownload, IconUsers } from '@tabler/icons-react';
import { Fragment, useEffect, useLayoutEffect, useRef, useState } from 'react';
import { errorMessage } from '../api/client.ts';
import { ErrorState, Loading } from '../components/StateViews.tsx';
import { useAsync } from '../hooks.ts';
import type { GroupInfo, GroupParticipant } from '../api/types.ts';
import { GroupInfoPanel } from './GroupInfo.tsx';
import { ContactInfoButton } from './ContactPanel.tsx';
import { useThread } from '../stores/thread.ts';
import { useClient } from '../stores/session.ts';
import { Composer } from './Composer.tsx';
import { MessageBubble } from './MessageBubble.tsx';

/** Distance from the top (px) at which the next older page is requested. */
export const LOAD_OLDER_THRESHOLD = 80;

export function HistoryMarker({ at }: { at: number | null }) {
  return (
    <Divider
      my="sm"
      data-testid="history-start"
      label={
        at === null
          ? 'No messages in this chat'
          : `History starts here · ${new Date(at * 1000).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' })}`
      }
      labelPosition="center"
    />
  );
}

/** Local calendar day of a Unix-seconds timestamp, as a comparable key. */
export function dayKey(ts: number): string {
  return new Date(ts * 1000).toDateString();
}

/** "Today", "Yesterday", or the date, between messages of different days. */
export function DateSeparator({ ts }: { ts: number }) {
  const d = new Date(ts * 1000);
  const now = new Date();
  const yesterday = new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1);
  const label =
    d.toDateString() === now.toDateString()
      ? 'Today'
      : d.toDateString() === yesterday.toDateString()
        ? 'Yesterday'
        : d.toLocaleDateString([], { weekday: 'short', day: 'numeric', month: 'short', year: d.getFullYear() === now.getFullYear() ? undefined : 'numeric' });
  return <Divider my={4} label={label} labelPosition="center" data-testid="date-separator" role="separator" aria-label={label} />;
}

export function MessageList({ connectionId }: { connectionId: string }) {
  const client = useClient();
  const { messages, loading, loadingOlder, reachedStart, historyStartsAt, nextBefore, error, loadOlder, nextAfter, loadingNewer, loadNewer, highlightId } =
    useThread();
  const scrolledTo = useRef<string | null>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const anchor = useRef<{ height: number; top: number; firstId: string | undefined } | null>(null);
  const lastId = useRef<string | undefined>(undefined);
  const content = useRef<HTMLDivElement>(null);
  /** Whether the operator is at the bottom (then growing content, e.g. an image that loads, keeps it there). */
  const atBottom = useRef(true);
  /** scrollTop at the last scroll event, to tell the operator scrolling up from content growing below. */
  const lastTop = useRef(0);

  useEffect(() => {
    const el = scroller.current;
    const inner = content.current;
    if (!el || !inner || typeof ResizeObserver === 'undefined') return;
    const stick = () => {
      // Not while an older page is being prepended (that keeps the operator's place instead).
      if (atBottom.current && !useThread.getState().loadingOlder) el.scrollTop = el.scrollHeight;
    };
    const observer = new ResizeObserver(() => requestAnimationFrame(stick));
    observer.observe(inner);
    // An image or video that finished loading (load does not bubble: listen in the capture phase).
    const onLoad = () => requestAnimationFrame(stick);
    el.addEventListener('load', onLoad, true);
    el.addEventListener('loadedmetadata', onLoad, true);
    return () => {
      observer.disconnect();
      el.removeEventListener('load', onLoad, true);
      el.removeEventListener('loadedmetadata', onLoad, true);
    };
  }, []);

  const requestOlder = () => {
    const el = scroller.current;
    if (!el || !nextBefore || loadingOlder) return;
    anchor.current = { height: el.scrollHeight, top: el.scrollTop, firstId: messages[0]?.id };
    void loadOlder(client);
  };

  // Keep the view still when older messages are prepended; follow the bottom when new ones arrive.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const a = anchor.current;
    const target = highlightId ? el.querySelector<HTMLElement>(`[data-message-id="${CSS.escape(highlightId)}"]`) : null;
    if (target && scrolledTo.current !== highlightId) {
      // Opened from a search result: centre the message once; later pages load around it without moving it.
      scrolledTo.current = highlightId;
      atBottom.current = false; // the operator is reading there: loading media must not pull the thread down
      target.scrollIntoView({ block: 'center' });
    } else if (a && messages[0]?.id !== a.firstId) {
      el.scrollTop = el.scrollHeight - a.height + a.top;
      anchor.current = null;
    } else if (!highlightId && messages.at(-1)?.id !== lastId.current) {
      const nearBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 200;
      if (lastId.current === undefined || nearBottom || messages.at(-1)?.fromMe) {
        el.scrollTop = el.scrollHeight;
        atBottom.current = true;
      }
    }
    lastId.current = messages.at(-1)?.id;
  }, [messages]);

  // A short first page may not fill the view: keep loading until it scrolls or history ends.
  useEffect(() => {
    const el = scroller.current;
    if (el && !loading && !loadingOlder && nextBefore && el.scrollHeight <= el.clientHeight + LOAD_OLDER_THRESHOLD && el.clientHeight > 0) requestOlder();
  });

  const byId = new Map(messages.map((m) => [m.id, m]));

  return (
    <div
      className="thread-scroll"
      ref={scroller}
      data-testid="thread-scroll"
      onScroll={(e) => {
        const el = e.currentTarget;
        // Only the operator scrolling up lets go of the bottom: content growing under a programmatic scroll (an
        // image that loads) must not, or the thread would stop following.
        if (el.scrollHeight - el.scrollTop - el.clientHeight < 40) atBottom.current = true;
        else if (el.scrollTop < lastTop.current - 2) atBottom.current = false;
        lastTop.current = el.scrollTop;
        if (el.scrollTop < LOAD_OLDER_THRESHOLD) requestOlder();
        if (nextAfter && !loadingNewer && el.scrollHeight - el.scrollTop - el.clientHeight < LOAD_OLDER_THRESHOLD) void loadNewer(client);
      }}
      role="log"
      aria-live="polite"
      aria-busy={loading || loadingOlder}
    >
      {error && <ErrorState message={error} />}
      {loading && <Loading label="Loading messages…" />}
      {!loading && reachedStart && <HistoryMarker at={historyStartsAt} />}
      {!loading && !reachedStart && (
        <Center py="xs">
          {loadingOlder ? (
            <Loader size="xs" aria-label="Loading older messages" data-testid="loading-older" />
          ) : (
            <Button size="compact-xs" variant="subtle" onClick={requestOlder} data-testid="load-older">
              Load older messages
            </Button>
          )}
        </Center>
      )}
      <Stack gap={6} ref={content}>
        {messages.map((m, i) => (
          <Fragment key={m.id}>
            {(i === 0 ? reachedStart : dayKey(messages[i - 1]!.timestamp) !== dayKey(m.timestamp)) && <DateSeparator ts={m.timestamp} />}
            <div data-message-id={m.id} className={m.id === highlightId ? 'search-hit' : undefined} data-testid={m.id === highlightId ? 'search-hit' : undefined}>
              <MessageBubble message={m} quoted={m.quotedMessageId ? byId.get(m.quotedMessageId) : undefined} connectionId={connectionId} />
            </div>
          </Fragment>
        ))}
      </Stack>
      {nextAfter && (
        <Center py="xs">
          {loadingNewer ? (
            <Loader size="xs" aria-label="Loading newer messages" />
          ) : (
            <Button size="compact-xs" variant="subtle" onClick={() => void loadNewer(client)} data-testid="load-newer">
              Load newer messages
            </Button>
          )}
        </Center>
      )}
    </div>
  );
}

/** The thread menu's "Export chat": downloads the transcript (JSONL or HTML) or a ZIP with the media. */
function ExportMenu({ connectionId, chatId }: { connectionId: string; chatId: string }) {
  const client = useClient();
  const [busy, setBusy] = useState(false);
  const [failed, setFailed] = useState<string | null>(null);
  const download = async (format: 'jsonl' | 'html', media: boolean) => {
    setBusy(true);
    setFailed(null);
    try {
      const { blob, filename } = await client.exportChat(connectionId, chatId, format, media);
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = filename;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      setFailed(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Menu position="bottom-end" withinPortal>
      <Menu.Target>
        <ActionIcon variant="subtle" aria-label="Thread menu" data-testid="thread-menu" loading={busy} color={failed ? 'red' : undefined} title={failed ?? undefined}>
          <IconDotsVertical size={18} />
        </ActionIcon>
      </Menu.Target>
      <Menu.Dropdown>
        <Menu.Label>Export chat</Menu.Label>
        <Menu.Item leftSection={<IconDownload size={14} />} onClick={() => void download('html', false)} data-testid="export-html">
          Readable transcript (HTML)
        </Menu.Item>
        <Menu.Item leftSection={<IconDownload size={14} />} onClick={() => void download('jsonl', false)} data-testid="export-jsonl">
          Messages as JSONL
        </Menu.Item>
        <Menu.Item leftSection={<IconDownload size={14} />} onClick={() => void download('html', true)} data-testid="export-zip">
          Transcript with media (ZIP)
        </Menu.Item>
      </Menu.Dropdown>
    </Menu>
  );
}

export function Thread({
  connectionId,
  chatId,
  chatName,
  online,
  onBack,
}: {
  connectionId: string;
  chatId: string;
  chatName: string;
  online: boolean;
  /** Shown as a Back button (phone width, where the list and the thread take turns). */
  onBack?: () => void;
}) {
  const client = useClient();
  const openChat = useThread((s) => s.openChat);
  const close = useThread((s) => s.close);
  const remoteTyping = useThread((s) => s.typing);
  const isGroup = chatId.endsWith('@g.us');
  // Members of a group chat, for the composer's @ mentions (loaded by GroupHeader, which only group chats mount).
  const [participants, setParticipants] = useState<GroupParticipant[] | undefined>(undefined);

  useEffect(() => {
    void openChat(client, connectionId, chatId);
    if (online) void client.markRead(connectionId, chatId).catch(() => undefined);
    return () => close();
  }, [client, connectionId, chatId, online, openChat, close]);

  return (
    <>
      <Group px="md" py="xs" justify="space-between" wrap="nowrap" style={{ borderBottom: '1px solid var(--mantine-color-default-border)' }}>
        {onBack && (
          <ActionIcon variant="subtle" onClick={onBack} aria-label="Back to chats" data-testid="thread-back">
            <IconArrowLeft size={18} />
          </ActionIcon>
        )}
        <Stack gap={0} style={{ flex: 1, minWidth: 0 }}>
          <Text fw={600} data-testid="thread-title" truncate>
            {chatName}
          </Text>
          <Text size="xs" c="dimmed" className="mono" truncate>
            {chatId}
          </Text>
        </Stack>
        {remoteTyping && <Badge variant="light">typing…</Badge>}
        {isGroup && <GroupHeader key={chatId} connectionId={connectionId} chatId={chatId} online={online} onParticipants={setParticipants} />}
        {!isGroup && chatId !== 'status@broadcast' && <ContactInfoButton key={chatId} connectionId={connectionId} chatId={chatId} chatName={chatName} online={online} />}
        <ExportMenu connectionId={connectionId} chatId={chatId} />
        {!online && (
          <Badge color="orange" variant="light">
            Offline: read only
          </Badge>
        )}
      </Group>
      <MessageList connectionId={connectionId} />
      <Composer connectionId={connectionId} chatId={chatId} disabled={!online} participants={isGroup ? participants : undefined} />
    </>
  );
}

/** The thread header's Group info button and panel; loads the members (again when the panel opens). */
function GroupHeader({
  connectionId,
  chatId,
  online,
  onParticipants,
}: {
  connectionId: string;
  chatId: string;
  online: boolean;
  onParticipants: (p: GroupParticipant[] | undefined) => void;
}) {
  const client = useClient();
  const [open, setOpen] = useState(false);
  const group = useAsync<GroupInfo | undefined>(
    () => (online ? client.group(connectionId, chatId) : Promise.resolve(undefined)),
    [client, connectionId, chatId, online, open],
  );
  useEffect(() => onParticipants(group.data?.participants), [group.data, onParticipants]);
  return (
    <>
      <ActionIcon variant="subtle" onClick={() => setOpen(true)} aria-label="Group info" data-testid="group-info-open" disabled={!online}>
        <IconUsers size={18} />
      </ActionIcon>
      <GroupInfoPanel opened={open} onClose={() => setOpen(false)} group={group} />
    </>
  );
}
