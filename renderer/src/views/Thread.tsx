/**
 * One chat: messages oldest → newest in a virtualized list, older pages loaded when scrolled to the top (scroll
 * position kept), a "history starts here" marker once `nextBefore` is null, read receipt on open, and the composer.
 */
import { ActionIcon, Badge, Button, Center, Divider, Group, Indicator, Loader, Menu, Stack, Text, VisuallyHidden } from '@mantine/core';
import { observeElementRect, useVirtualizer } from '@tanstack/react-virtual';
import { IconArrowLeft, IconChevronDown, IconDotsVertical, IconDownload, IconUsers } from '@tabler/icons-react';
import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import { errorMessage } from '../api/client.ts';
import { ErrorState, Loading } from '../components/StateViews.tsx';
import { useAsync } from '../hooks.ts';
import type { GroupInfo, GroupParticipant } from '../api/types.ts';
import { GroupInfoPanel } from './GroupInfo.tsx';
import { ContactInfoButton } from './ContactPanel.tsx';
import { useThread } from '../stores/thread.ts';
import { useClient } from '../stores/session.ts';
import { Composer } from './Composer.tsx';
import { MessageBubble, senderName } from './MessageBubble.tsx';

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

/** Height (px) kept above the first message for the history marker, the loader or "Load older messages". */
export const TOP_SLOT = 48;
/** Height (px) kept below the last message for "Load newer messages" (a thread opened at a search hit). */
const BOTTOM_SLOT = 44;
/** A message row's height (px) before it is measured. */
const ESTIMATED_ROW = 64;

/**
 * The thread's messages, virtualized (@tanstack/react-virtual): only the rows in and near the view are in the
 * DOM, each measured as it renders, so a 2,000-message thread costs what a 30-message one does. Behaviour:
 * - opens at the newest message and stays at the bottom as messages arrive and media loads, until the operator
 *   scrolls up (then nothing moves under them, a button jumps back to the newest with a count of new incoming
 *   messages; an own send returns to the bottom);
 * - scrolled near the top, the next older page loads and the rows in view stay where they are;
 * - a date separator above the first message of each day (part of that message's row);
 * - opened at a search hit, that message is centred and highlighted, with newer pages below;
 * - each message is an article named by its sender and time; new incoming messages are announced in a polite
 *   status region (the list itself is not live: rows mounting on scroll are not news).
 */
export function MessageList({ connectionId }: { connectionId: string }) {
  const client = useClient();
  const {
    messages,
    loading,
    loadingOlder,
    reachedStart,
    historyStartsAt,
    nextBefore,
    error,
    loadOlder,
    nextAfter,
    loadingNewer,
    loadNewer,
    highlightId,
  } = useThread();
  const scrolledTo = useRef<string | null>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const lastId = useRef<string | undefined>(undefined);
  const content = useRef<HTMLDivElement>(null);
  /** Whether the operator is at the bottom (then growing content, e.g. an image that loads, keeps it there). */
  const atBottom = useRef(true);
  /** scrollTop at the last scroll event, to tell the operator scrolling up from content growing below. */
  const lastTop = useRef(0);
  const [announcement, setAnnouncement] = useState('');
  /** The message the announcement quotes: deleted for everyone, its text leaves the announcement too. */
  const announcedId = useRef<string | undefined>(undefined);
  /** Scrolled away from the newest messages: the jump button shows, with the incoming messages since. */
  const [away, setAway] = useState(false);
  const [unseen, setUnseen] = useState(0);

  const virtualizer = useVirtualizer({
    count: messages.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ESTIMATED_ROW,
    getItemKey: (i) => messages[i]!.id,
    overscan: 6,
    paddingStart: TOP_SLOT,
    paddingEnd: nextAfter ? BOTTOM_SLOT : 0,
    // Older messages prepended: the row in view keeps its place (the virtualizer re-anchors on it).
    anchorTo: 'end',
    // A list without a height yet (a hidden pane, or no layout at all) renders a window's worth of rows, not none.
    observeElementRect: (instance, cb) =>
      observeElementRect(instance, (rect) => cb(rect.height > 0 ? rect : { ...rect, height: window.innerHeight })),
  });

  useEffect(() => {
    const el = scroller.current;
    const inner = content.current;
    if (!el || !inner || typeof ResizeObserver === 'undefined') return;
    const stick = () => {
      // Not while an older page is being prepended (that keeps the operator's place instead), nor when the bottom
      // is not the newest message (a thread opened at a search hit: newer pages load below as the operator scrolls).
      const { loadingOlder, nextAfter } = useThread.getState();
      if (atBottom.current && !loadingOlder && !nextAfter) el.scrollTop = el.scrollHeight;
    };
    // The list's height changes as rows are measured (an image or video that loads, a reaction, an edit).
    const observer = new ResizeObserver(() => requestAnimationFrame(stick));
    observer.observe(inner);
    return () => observer.disconnect();
  }, []);

  const requestOlder = () => {
    const el = scroller.current;
    if (!el || !nextBefore || loadingOlder) return;
    void loadOlder(client);
  };

  // Follow the bottom when new messages arrive (older ones prepended keep the view still: `anchorTo`).
  useLayoutEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const hit = highlightId ? messages.findIndex((m) => m.id === highlightId) : -1;
    const last = messages.at(-1);
    if (announcedId.current && messages.some((m) => m.id === announcedId.current && m.kind === 'revoked')) {
      announcedId.current = undefined;
      setAnnouncement('');
    }
    if (!last) {
      // Another chat is opening (or the same one again, at a search hit): nothing is unseen in it yet, and its hit
      // is scrolled to even when it is the one scrolled to last time.
      setUnseen(0);
      setAway(false);
      scrolledTo.current = null;
    }
    if (hit !== -1 && scrolledTo.current !== highlightId) {
      // Opened from a search result: centre the message once; later pages load around it without moving it.
      scrolledTo.current = highlightId;
      atBottom.current = false; // the operator is reading there: loading media must not pull the thread down
      virtualizer.scrollToIndex(hit, { align: 'center' });
    } else if (!highlightId && last?.id !== lastId.current) {
      const first = lastId.current === undefined;
      const nearBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 200;
      if (first || nearBottom || last?.fromMe) {
        el.scrollTop = el.scrollHeight;
        atBottom.current = true;
      }
      if (!first && last && !last.fromMe && !last.local) {
        setAnnouncement(`New message from ${senderName(last)}: ${last.text || `[${last.type}]`}`);
        announcedId.current = last.id;
        if (!atBottom.current) setUnseen((n) => n + 1);
      }
    }
    lastId.current = last?.id;
  }, [messages]);

  // A short first page may not fill the view: keep loading until it scrolls or history ends.
  useEffect(() => {
    const el = scroller.current;
    if (
      el &&
      !loading &&
      !loadingOlder &&
      nextBefore &&
      el.scrollHeight <= el.clientHeight + LOAD_OLDER_THRESHOLD &&
      el.clientHeight > 0
    )
      requestOlder();
  });

  const byId = new Map(messages.map((m) => [m.id, m]));

  const jumpToNewest = () => {
    const el = scroller.current;
    if (!el) return;
    atBottom.current = true;
    setUnseen(0);
    el.scrollTop = el.scrollHeight;
  };

  return (
    <>
      {error && <ErrorState message={error} />}
      <div className="thread-frame">
        <div
          className="thread-scroll"
          ref={scroller}
          data-testid="thread-scroll"
          onScroll={(e) => {
            const el = e.currentTarget;
            // Only the operator scrolling up lets go of the bottom: content growing under a programmatic scroll (an
            // image that loads) must not, or the thread would stop following.
            const fromBottom = el.scrollHeight - el.scrollTop - el.clientHeight;
            if (fromBottom < 40) atBottom.current = true;
            else if (el.scrollTop < lastTop.current - 2) atBottom.current = false;
            lastTop.current = el.scrollTop;
            setAway(!atBottom.current && fromBottom > el.clientHeight / 2);
            if (atBottom.current) setUnseen(0);
            if (el.scrollTop < LOAD_OLDER_THRESHOLD) requestOlder();
            if (nextAfter && !loadingNewer && el.scrollHeight - el.scrollTop - el.clientHeight < LOAD_OLDER_THRESHOLD)
              void loadNewer(client);
          }}
          role="log"
          aria-live="off"
          aria-label="Messages"
          aria-busy={loading || loadingOlder}
          tabIndex={0}
        >
          {loading && <Loading label="Loading messages…" />}
          <div ref={content} className="thread-rows" style={{ height: virtualizer.getTotalSize() }}>
            {!loading && (
              <Center className="thread-slot" style={{ top: 0, height: TOP_SLOT }}>
                {reachedStart ? (
                  <HistoryMarker at={historyStartsAt} />
                ) : loadingOlder ? (
                  <Loader size="xs" aria-label="Loading older messages" data-testid="loading-older" />
                ) : (
                  <Button size="compact-xs" variant="subtle" onClick={requestOlder} data-testid="load-older">
                    Load older messages
                  </Button>
                )}
              </Center>
            )}
            {virtualizer.getVirtualItems().map((row) => {
              const m = messages[row.index]!;
              const i = row.index;
              const separator = i === 0 ? reachedStart : dayKey(messages[i - 1]!.timestamp) !== dayKey(m.timestamp);
              return (
                <div
                  key={row.key}
                  ref={virtualizer.measureElement}
                  data-index={i}
                  className="thread-row"
                  style={{ transform: `translateY(${row.start}px)` }}
                >
                  {separator && <DateSeparator ts={m.timestamp} />}
                  <div
                    className={m.id === highlightId ? 'thread-message search-hit' : 'thread-message'}
                    data-testid={m.id === highlightId ? 'search-hit' : undefined}
                  >
                    <MessageBubble
                      message={m}
                      quoted={m.quotedMessageId ? byId.get(m.quotedMessageId) : undefined}
                      connectionId={connectionId}
                    />
                  </div>
                </div>
              );
            })}
            {nextAfter && (
              <Center className="thread-slot" style={{ bottom: 0, height: BOTTOM_SLOT }}>
                {loadingNewer ? (
                  <Loader size="xs" aria-label="Loading newer messages" />
                ) : (
                  <Button
                    size="compact-xs"
                    variant="subtle"
                    onClick={() => void loadNewer(client)}
                    data-testid="load-newer"
                  >
                    Load newer messages
                  </Button>
                )}
              </Center>
            )}
          </div>
        </div>
        {away && !nextAfter && (
          <Indicator
            label={unseen}
            size={16}
            disabled={unseen === 0}
            className="thread-jump"
            data-testid="jump-to-newest"
            data-unseen={unseen}
          >
            <ActionIcon
              variant="default"
              radius="xl"
              size="lg"
              onClick={jumpToNewest}
              aria-label={unseen ? `Jump to the newest message (${unseen} new)` : 'Jump to the newest message'}
            >
              <IconChevronDown size={18} />
            </ActionIcon>
          </Indicator>
        )}
      </div>
      <VisuallyHidden role="status" data-testid="message-announcer">
        {announcement}
      </VisuallyHidden>
    </>
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
