/** Settings: appearance, the account's WhatsApp profile, the service this console talks to, the machine's settings (MachineSettings), signing out. */
import { Alert, Button, Group, Paper, SegmentedControl, Stack, Table, Text, Title, useMantineColorScheme, type MantineColorScheme } from '@mantine/core';
import { desktopBridge } from '../api/desktop.ts';
import { useEvents } from '../stores/events.ts';
import { useSession } from '../stores/session.ts';
import { MachineSettings } from './MachineSettings.tsx';
import { ProfileSettings } from './ProfileSettings.tsx';

export function SettingsView() {
  const { colorScheme, setColorScheme } = useMantineColorScheme();
  const { health, baseUrl, desktop, secretsDegraded, signOut } = useSession();
  const socket = useEvents((s) => s.socket);
  const bridge = desktopBridge();
  return (
    <Stack maw={640}>
      <Title order={1} size="h3">Settings</Title>
      {secretsDegraded && (
        <Alert color="orange" title="No OS keychain">
          The operator token is stored in a file readable only by you (0600) because no system keychain was available.
        </Alert>
      )}
      <Paper withBorder p="md">
        <Stack gap="xs">
          <Text fw={600}>Appearance</Text>
          <SegmentedControl
            value={colorScheme}
            onChange={(v) => setColorScheme(v as MantineColorScheme)}
            data={[
              { value: 'auto', label: 'System' },
              { value: 'light', label: 'Light' },
              { value: 'dark', label: 'Dark' },
            ]}
            aria-label="Color scheme"
          />
        </Stack>
      </Paper>
      <ProfileSettings />
      <Paper withBorder p="md">
        <Text fw={600} mb="xs">
          Service
        </Text>
        <Table>
          <Table.Tbody>
            <Table.Tr>
              <Table.Td>API</Table.Td>
              <Table.Td className="mono">{baseUrl}</Table.Td>
            </Table.Tr>
            <Table.Tr>
              <Table.Td>Version</Table.Td>
              <Table.Td>{health?.version ?? '—'}</Table.Td>
            </Table.Tr>
            <Table.Tr>
              <Table.Td>Mode</Table.Td>
              <Table.Td>{health?.sandbox ? 'Sandbox (simulated WhatsApp)' : 'Live'}</Table.Td>
            </Table.Tr>
            <Table.Tr>
              <Table.Td>Event stream</Table.Td>
              <Table.Td>{socket}</Table.Td>
            </Table.Tr>
            <Table.Tr>
              <Table.Td>App</Table.Td>
              <Table.Td>{desktop ? 'Desktop' : 'Browser'}</Table.Td>
            </Table.Tr>
          </Table.Tbody>
        </Table>
      </Paper>
      <Paper withBorder p="md">
        <Text fw={600} mb="xs">
          Machine
        </Text>
        <MachineSettings />
      </Paper>
      <Group>
        {!desktop && (
          <Button variant="default" onClick={signOut}>
            Sign out
          </Button>
        )}
        {bridge && (
          <>
            <Button variant="default" onClick={() => void bridge.hideWindow()}>
              Hide window (keep running)
            </Button>
            <Button color="red" variant="light" onClick={() => void bridge.quit()}>
              Quit Switchboard
            </Button>
          </>
        )}
      </Group>
    </Stack>
  );
}
