/** The signed-in console: header, navbar, the current view; loads connections and opens the live stream. */
import { ActionIcon, AppShell, Badge, Burger, Group, NavLink, Text, Tooltip, useMantineColorScheme } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import {
  IconActivity,
  IconCreditCard,
  IconKey,
  IconMessages,
  IconMoon,
  IconPlugConnected,
  IconSettings,
  IconSun,
  IconWebhook,
} from '@tabler/icons-react';
import { useEffect, type ReactNode } from 'react';
import { startLive } from '../live.ts';
import { useChats } from '../stores/chats.ts';
import { useConnections } from '../stores/connections.ts';
import { useEvents } from '../stores/events.ts';
import { useNav, type View } from '../stores/nav.ts';
import { useClient, useSession } from '../stores/session.ts';
import { BillingView } from '../views/BillingView.tsx';
import { ChatsView } from '../views/ChatsView.tsx';
import { ConnectionsView } from '../views/ConnectionsView.tsx';
import { EventsView } from '../views/EventsView.tsx';
import { SettingsView } from '../views/SettingsView.tsx';
import { TokensView } from '../views/TokensView.tsx';
import { WebhooksView } from '../views/WebhooksView.tsx';
import { ConnectionPicker } from './ConnectionPicker.tsx';
import { SandboxBadge } from './SandboxBadge.tsx';
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

function LiveIndicator() {
  const state = useEvents((s) => s.socket);
  const color = state === 'open' ? 'green' : state === 'connecting' ? 'yellow' : 'red';
  const label = state === 'open' ? 'Live' : state === 'connecting' ? 'Connecting…' : 'Offline';
  return (
    <Badge variant="dot" color={color} data-testid="live-indicator" data-state={state}>
      {label}
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
    return startLive(client, () => {
      void useConnections.getState().load(client);
      const cid = useChats.getState().connectionId;
      if (cid) void useChats.getState().load(client, cid);
    });
  }, [client, load]);

  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Toggle navigation" />
            <Text fw={700} size="lg">
              Switchboard
            </Text>
            <SandboxBadge />
          </Group>
          <Group gap="sm" wrap="nowrap">
            <SearchBox />
            <ConnectionPicker />
            <LiveIndicator />
            <ThemeToggle />
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Main">
        <AppShell.Section grow>
          {NAV.map((n) => (
            <NavLink
              key={n.view}
              component="button"
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
      <AppShell.Main>{VIEW_COMPONENTS[view]()}</AppShell.Main>
    </AppShell>
  );
}
