/** Live event monitor: the frames of the event stream, filterable by type, connection and text; pausable. */
import { Badge, Button, Code, Group, MultiSelect, Paper, ScrollArea, Stack, Switch, Text, TextInput, Title } from '@mantine/core';
import { useEffect, useMemo, useRef, useState } from 'react';
import { errorMessage } from '../api/client.ts';
import { EVENT_TYPES, type EventFrame } from '../api/types.ts';
import { Empty, ErrorState, Loading } from '../components/StateViews.tsx';
import { useConnections } from '../stores/connections.ts';
import { MAX_FRAMES, useEvents } from '../stores/events.ts';
import { useClient } from '../stores/session.ts';

export function filterFrames(frames: EventFrame[], f: { types: string[]; connectionId: string | null; text: string }): EventFrame[] {
  const text = f.text.trim().toLowerCase();
  return frames.filter(
    (fr) =>
      (f.types.length === 0 || f.types.includes(fr.event)) &&
      (!f.connectionId || fr.connectionId === f.connectionId) &&
      (!text || JSON.stringify(fr.payload).toLowerCase().includes(text)),
  );
}

export function EventsView() {
  const client = useClient();
  const frames = useEvents((s) => s.frames);
  const [history, setHistory] = useState<'loading' | 'loaded' | string>('loading');
  // The log's recent history (the stream only brings what happens while the page is open).
  useEffect(() => {
    let stale = false;
    client.recentEvents(MAX_FRAMES).then(
      (recent) => {
        if (stale) return;
        useEvents.getState().add(recent);
        setHistory('loaded');
      },
      (err: unknown) => !stale && setHistory(errorMessage(err)),
    );
    return () => {
      stale = true;
    };
  }, [client]);
  const clear = useEvents((s) => s.clear);
  const connections = useConnections((s) => s.items);
  const [types, setTypes] = useState<string[]>([]);
  const [onlyCurrent, setOnlyCurrent] = useState(false);
  const [text, setText] = useState('');
  const [paused, setPaused] = useState(false);
  const frozen = useRef<EventFrame[]>([]);
  const selectedId = useConnections((s) => s.selectedId);
  if (!paused) frozen.current = frames;
  const source = frozen.current;
  const shown = useMemo(
    () => filterFrames(source, { types, connectionId: onlyCurrent ? selectedId : null, text }).slice().reverse(),
    [source, types, onlyCurrent, selectedId, text],
  );
  const name = (id: string) => connections.find((c) => c.id === id)?.name ?? id.slice(0, 8);

  return (
    <Stack h="calc(100vh - 56px - 2 * var(--mantine-spacing-md))">
      <Group justify="space-between">
        <Title order={1} size="h3">Events</Title>
        <Group>
          <Switch label="Pause" checked={paused} onChange={(e) => setPaused(e.currentTarget.checked)} />
          <Button variant="default" size="xs" onClick={clear}>
            Clear
          </Button>
        </Group>
      </Group>
      <Group align="flex-end">
        <MultiSelect label="Types" placeholder="All types" data={[...EVENT_TYPES]} value={types} onChange={setTypes} clearable w={320} />
        <TextInput label="Contains" value={text} onChange={(e) => setText(e.currentTarget.value)} w={220} />
        <Switch label="Current connection only" checked={onlyCurrent} onChange={(e) => setOnlyCurrent(e.currentTarget.checked)} />
      </Group>
      <ScrollArea style={{ flex: 1 }} viewportProps={{ tabIndex: 0, 'aria-label': 'Events' }}>
        {history !== 'loading' && history !== 'loaded' && <ErrorState message={`The event history could not be loaded: ${history}`} />}
        {history === 'loading' && shown.length === 0 && <Loading label="Loading recent events…" />}
        {history !== 'loading' && shown.length === 0 && <Empty title="No events yet">Events appear here as they happen (the last 500 are kept).</Empty>}
        <Stack gap={6}>
          {shown.map((f) => (
            <Paper key={f.seq} withBorder p="xs" data-testid="event-row" data-event={f.event}>
              <Group gap="xs">
                <Text size="xs" c="dimmed" className="mono">
                  #{f.seq}
                </Text>
                <Badge size="sm" variant="light">
                  {f.event}
                </Badge>
                <Text size="xs">{name(f.connectionId)}</Text>
                <Text size="xs" c="dimmed">
                  {new Date(f.timestamp).toLocaleTimeString()}
                </Text>
              </Group>
              <Code block mt={4} style={{ maxHeight: 160, overflow: 'auto' }} tabIndex={0} aria-label={`Payload of event ${f.seq}`}>
                {JSON.stringify(f.payload, null, 2)}
              </Code>
            </Paper>
          ))}
        </Stack>
      </ScrollArea>
    </Stack>
  );
}
