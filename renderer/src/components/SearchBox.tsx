/**
 * The top bar's message search: a box that opens a panel of results (`GET /search` across all connections, or the
 * selected connection's `/connections/:id/search`), grouped by chat with their snippets («…» shown highlighted).
 * A click opens the chat scrolled to the message and highlighted (stores/jump.ts: the thread loads the page `around` it).
 */
import { Badge, Button, Group, Modal, ScrollArea, SegmentedControl, Stack, Text, TextInput, UnstyledButton } from '@mantine/core';
import { IconSearch } from '@tabler/icons-react';
import { useState } from 'react';
import { errorMessage } from '../api/client.ts';
import type { SearchResult } from '../api/types.ts';
import { useConnections } from '../stores/connections.ts';
import { Snippet } from './Snippet.tsx';
import { openAtMessage } from '../stores/jump.ts';
import { useClient } from '../stores/session.ts';

type Hit = SearchResult & { connectionId: string };

export function SearchBox() {
  const client = useClient();
  const selectedId = useConnections((s) => s.selectedId);
  const connections = useConnections((s) => s.items);
  const [q, setQ] = useState('');
  const [scope, setScope] = useState<'current' | 'all'>('current');
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [hits, setHits] = useState<Hit[]>([]);
  const [nextBefore, setNextBefore] = useState<string | null>(null);

  const run = async (more = false) => {
    if (!q.trim()) return;
    setOpen(true);
    setBusy(true);
    setError(null);
    try {
      const connectionId = scope === 'current' ? selectedId : null;
      const page = await client.search(q, { connectionId, limit: 30, before: more ? nextBefore : null });
      const results = page.results.map((r) => ({ ...r, connectionId: r.connectionId ?? connectionId ?? '' }));
      setHits((h) => (more ? [...h, ...results] : results));
      setNextBefore(page.nextBefore);
    } catch (err) {
      setError(errorMessage(err));
      if (!more) setHits([]);
    } finally {
      setBusy(false);
    }
  };

  const openHit = (hit: Hit) => {
    setOpen(false);
    openAtMessage(client, hit.connectionId, hit.message.chatId, hit.message.id);
  };

  // Grouped by chat, in the order of each chat's best (first) hit.
  const groups = new Map<string, { title: string; connectionId: string; hits: Hit[] }>();
  for (const h of hits) {
    const key = `${h.connectionId}|${h.message.chatId}`;
    const g = groups.get(key) ?? { title: h.chatName ?? h.message.chatId, connectionId: h.connectionId, hits: [] };
    g.hits.push(h);
    groups.set(key, g);
  }
  const connectionName = (id: string) => connections.find((c) => c.id === id)?.name ?? connections.find((c) => c.id === id)?.phoneNumber ?? id.slice(0, 8);

  return (
    <>
      <TextInput
        size="xs"
        w={{ base: 110, sm: 260 }}
        placeholder="Search messages"
        aria-label="Search messages"
        data-testid="search-box"
        leftSection={<IconSearch size={14} />}
        value={q}
        onChange={(e) => setQ(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') void run();
        }}
      />
      <Modal opened={open} onClose={() => setOpen(false)} title="Search messages" size="lg" scrollAreaComponent={ScrollArea.Autosize}>
        <Stack gap="sm">
          <Group gap="xs" wrap="nowrap">
            <TextInput
              style={{ flex: 1 }}
              value={q}
              onChange={(e) => setQ(e.currentTarget.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter') void run();
              }}
              aria-label="Search query"
              data-autofocus
            />
            <SegmentedControl
              size="xs"
              value={scope}
              onChange={(v) => setScope(v as 'current' | 'all')}
              data={[
                { value: 'current', label: 'This connection', disabled: !selectedId },
                { value: 'all', label: 'All' },
              ]}
            />
            <Button size="xs" onClick={() => void run()} loading={busy}>
              Search
            </Button>
          </Group>
          <Text size="xs" c="dimmed">
            Words, "a phrase", prefix*, -exclude. Case and accents are ignored.
          </Text>
          {error && (
            <Text c="red" size="sm" data-testid="search-error">
              {error}
            </Text>
          )}
          {!busy && !error && hits.length === 0 && <Text c="dimmed">No messages found.</Text>}
          {[...groups.entries()].map(([key, g]) => (
            <Stack key={key} gap={4} data-testid="search-group">
              <Group gap="xs">
                <Text fw={600} size="sm">
                  {g.title}
                </Text>
                {scope === 'all' && <Badge variant="light" size="xs">{connectionName(g.connectionId)}</Badge>}
              </Group>
              {g.hits.map((h) => (
                <UnstyledButton key={h.message.id} onClick={() => openHit(h)} className="chat-item" px="sm" py={6} data-testid="search-result">
                  <Group justify="space-between" wrap="nowrap" gap="xs" align="flex-start">
                    <Snippet text={h.snippet} />
                    <Text size="xs" c="dimmed" style={{ flexShrink: 0 }}>
                      {new Date(h.message.timestamp * 1000).toLocaleString([], { dateStyle: 'short', timeStyle: 'short' })}
                    </Text>
                  </Group>
                </UnstyledButton>
              ))}
            </Stack>
          ))}
          {nextBefore && (
            <Button variant="subtle" size="xs" onClick={() => void run(true)} loading={busy}>
              More results
            </Button>
          )}
        </Stack>
      </Modal>
    </>
  );
}
