/** The signed-in console: header, navbar, the current view; loads connections and opens the live stream. */
import { ActionIcon, Alert, AppShell, Badge, Box, Burger, Group, NavLink, Text, Tooltip, useMantineColorScheme } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import {
  IconActivity,
  IconCreditCard,
  IconKey,
  IconMessages,
  IconMoon,
  IconPlugConnected,
  IconPlugConnectedX,
  IconSettings,
  IconSun,
  IconWebhook,
} from '@tabler/icons-react';
import { lazy, Suspense, useEffect, type ReactNode } from 'react';
import type { ApiClient } from '../api/client.ts';
import { startLive } from '../live.ts';
import { useChats } from '../stores/chats.ts';
import { useConnections } from '../stores/connections.ts';
import { useEvents } from '../stores/events.ts';
import { useNav, type View } from '../stores/nav.ts';
import { useClient, useSession } from '../stores/session.ts';
import { ConnectionPicker } from './ConnectionPicker.tsx';
import { SandboxBadge } from './SandboxBadge.tsx';
import { Loading } from './StateViews.tsx';
import { SearchBox } from './SearchBox.tsx';

const NAV: Array<{ view: View; label: string; icon: ReactNode }> = [
  { view: 'connections', label: 'Connections', icon: <IconPlugConnected size={18} /> },
  { view: 'chats', label: 'Chats', icon: <IconMessages size={18} /> },
  { view: 'webhooks', label: 'Webhooks', icon: <IconWebhook size={18} /> },
  { view: 'tokens', label: 'Tokens', icon: <IconKey size={18} /> },
  { view: 'billing', label: 'Billing', icon: <IconCreditCard size={18} /> },
  { view: 'events', label: 'Events', icon: <IconActivity size={18} /> },
  { view: 'settings', label: 'Settings', icon: <IconSettings size={18} /> },
];

// Each view is its own chunk, fetched the first time it is opened.
const ConnectionsView = lazy(() => import('../views/ConnectionsView.tsx').then((m) => ({ default: m.ConnectionsView })));
const ChatsView = lazy(() => import('../views/ChatsView.tsx').then((m) => ({ default: m.ChatsView })));
const WebhooksView = lazy(() => import('../views/WebhooksView.tsx').then((m) => ({ default: m.WebhooksView })));
const TokensView = lazy(() => import('../views/TokensView.tsx').then((m) => ({ default: m.TokensView })));
const BillingView = lazy(() => import('../views/BillingView.tsx').then((m) => ({ default: m.BillingView })));
const EventsView = lazy(() => import('../views/EventsView.tsx').then((m) => ({ default: m.EventsView })));
const SettingsView = lazy(() => import('../views/SettingsView.tsx').then((m) => ({ default: m.SettingsView })));

const VIEW_COMPONENTS: Record<View, () => ReactNode> = {
  connections: () => <ConnectionsView />,
  chats: () => <ChatsView />,
  webhooks: () => <WebhooksView />,
  tokens: () => <TokensView />,
  billing: () => <BillingView />,
  events: () => <EventsView />,
  settings: () => <SettingsView />,
};

function ThemeToggle() {
  const { colorScheme, setColorScheme } = useMantineColorScheme();
  const dark = colorScheme === 'dark';
  return (
    <Tooltip label={dark ? 'Light theme' : 'Dark theme'}>
      <ActionIcon variant="default" aria-label="Toggle color scheme" onClick={() => setColorScheme(dark ? 'light' : 'dark')}>
        {dark ? <IconSun size={16} /> : <IconMoon size={16} />}
      </ActionIcon>
    </Tooltip>
  );
}

/** How often the console asks whether the service is back while its event stream is down, in ms. */
const REACHABILITY_POLL_MS = 2_000;

/**
 * Keeps `reachable` honest: while the event stream is not open, asks `GET /api/` every 2 s; the first failure
 * marks the service unreachable (banner, statuses unknown), the first answer marks it back and reloads the lists.
 */
function useServiceReachability(client: ApiClient): void {
  const socket = useEvents((s) => s.socket);
  useEffect(() => {
    if (socket === 'open') {
      useSession.getState().setReachable(true);
      return;
    }
    let stopped = false;
    const check = async () => {
      const ok = await client.health().then(
        (health) => {
          useSession.setState({ health });
          return true;
        },
        () => false,
      );
      if (stopped) return;
      const was = useSession.getState().reachable;
      useSession.getState().setReachable(ok);
      if (ok && !was) void useConnections.getState().load(client);
    };
    void check();
    const timer = setInterval(() => void check(), REACHABILITY_POLL_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [client, socket]);
}

const STORAGE_POLL_MS = 15_000;

/** The data dir is nearly full (`low`) or commits fail (`unavailable`): say so above every view. */
function StorageBanner() {
  const storage = useSession((s) => s.health?.storage);
  if (!storage || storage === 'ok') return null;
  return storage === 'low' ? (
    <Alert color="yellow" mb="md" title="The data directory is running out of space" data-testid="storage-banner" data-state="low" role="status">
      Less than twice the configured minimum (--min-free-mb) is free. Free some space before messages can no longer be stored.
    </Alert>
  ) : (
    <Alert color="red" variant="filled" mb="md" title="Storage is unavailable" data-testid="storage-banner" data-state="unavailable" role="alert">
      The data directory is full or not writable. Connections are paused without losing messages (WhatsApp keeps them until they can
      be stored) and sends are refused; everything resumes by itself once space is freed.
    </Alert>
  );
}

/** The desktop app could not have its configured API port and listens on another one (docs/settings.md). */
function PortFallbackBanner() {
  const fallback = useSession((s) => s.health?.portFallback);
  if (!fallback) return null;
  return (
    <Alert color="yellow" mb="md" title={`The API is on port ${fallback.port}, not ${fallback.requested}`} data-testid="port-fallback-banner" role="status">
      {fallback.message}
    </Alert>
  );
}

function UnreachableBanner() {
  const reachable = useSession((s) => s.reachable);
  const baseUrl = useSession((s) => s.baseUrl);
  if (reachable) return null;
  return (
    <Alert color="red" variant="filled" mb="md" icon={<IconPlugConnectedX size={18} />} title="The service is not answering" data-testid="service-unreachable" role="alert">
      Nothing answers at {baseUrl}. Connection and chat states below are unknown until it is back; this page
      reconnects by itself.
    </Alert>
  );
}

function LiveIndicator() {
  const state = useEvents((s) => s.socket);
  const color = state === 'open' ? 'green' : state === 'connecting' ? 'yellow' : 'red';
  const label = state === 'open' ? 'Live' : state === 'connecting' ? 'Connecting…' : 'Offline';
  return (
    <Badge variant="dot" color={color} data-testid="live-indicator" data-state={state} role="status" aria-label={`Event stream: ${label}`}>
      <Box component="span" visibleFrom="xs">
        {label}
      </Box>
    </Badge>
  );
}

export function Shell() {
  const client = useClient();
  const [opened, { toggle, close }] = useDisclosure();
  const view = useNav((s) => s.view);
  const go = useNav((s) => s.go);
  const version = useSession((s) => s.health?.version);
  const load = useConnections((s) => s.load);

  useEffect(() => {
    void load(client);
    return startLive(
      client,
      () => {
        void useConnections.getState().load(client);
        const cid = useChats.getState().connectionId;
        if (cid) void useChats.getState().load(client, cid);
      },
      () => useSession.getState().expire(),
    );
  }, [client, load]);
  useServiceReachability(client);
  // The health route also tells how the data dir is doing (storage low / unavailable): look every 15 s.
  useEffect(() => {
    const timer = setInterval(() => {
      client.health().then(
        (health) => useSession.setState({ health }),
        () => undefined,
      );
    }, STORAGE_POLL_MS);
    return () => clearInterval(timer);
  }, [client]);

  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Toggle navigation" />
            <Text fw={700} size="lg" visibleFrom="xs">
              Switchboard
            </Text>
            <SandboxBadge />
          </Group>
          {/* At phone width (390 px) everything fits: the theme toggle moves to Settings only. */}
          <Group gap="xs" wrap="nowrap">
            <SearchBox />
            <ConnectionPicker />
            <LiveIndicator />
            <Box visibleFrom="xs">
              <ThemeToggle />
            </Box>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Main">
        <AppShell.Section grow>
          {NAV.map((n) => (
            <NavLink
              key={n.view}
              component="button"
              variant="filled"
              label={n.label}
              leftSection={n.icon}
              active={view === n.view}
              aria-current={view === n.view ? 'page' : undefined}
              data-testid={`nav-${n.view}`}
              onClick={() => {
                go(n.view);
                close();
              }}
            />
          ))}
        </AppShell.Section>
        <AppShell.Section>
          <Text size="xs" c="dimmed" px="sm">
            {version ? `v${version}` : ''}
          </Text>
        </AppShell.Section>
      </AppShell.Navbar>
      <AppShell.Main>
        <UnreachableBanner />
        <StorageBanner />
        <PortFallbackBanner />
        <Suspense fallback={<Loading />}>{VIEW_COMPONENTS[view]()}</Suspense>
      </AppShell.Main>
    </AppShell>
  );
}
