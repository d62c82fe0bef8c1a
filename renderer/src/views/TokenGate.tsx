/**
 * Browser sign-in: paste an API token; it is checked before use. The hint names the exact command for the mode
 * the service runs in (`--sandbox` selects the sandbox's data dir, so a token made without it is not known there).
 */
import { Alert, Button, Center, Checkbox, Code, Paper, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { IconKey } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { SandboxBadge } from '../components/SandboxBadge.tsx';
import { EXPIRED_MESSAGE, useSession } from '../stores/session.ts';

export function TokenGate() {
  const signIn = useSession((s) => s.signIn);
  const error = useSession((s) => s.error);
  const desktop = useSession((s) => s.desktop);
  const sandbox = useSession((s) => s.health?.sandbox === true);
  const command = `token create --user NAME${sandbox ? ' --sandbox' : ''}`;
  const expired = error === EXPIRED_MESSAGE;
  const [token, setToken] = useState('');
  const [remember, setRemember] = useState(false);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!token.trim()) return;
    setBusy(true);
    await signIn(token, remember);
    setBusy(false);
  };

  return (
    <Center mih="100vh" p="md">
      <Paper withBorder shadow="sm" p="xl" w={440} component="form" onSubmit={submit}>
        <Stack>
          <Title order={1} size="h2">
            Switchboard <SandboxBadge />
          </Title>
          <Text size="sm" c="dimmed">
            Enter an API token to open the operator console. Create one with{' '}
            <Code data-testid="token-command">switchboard {command}</Code> (from a checkout:{' '}
            <Code>npm run cli -- {command}</Code>).
          </Text>
          {(desktop || expired) && error && (
            <Alert color="red" data-testid="sign-in-reason">
              {error}
            </Alert>
          )}
          <PasswordInput
            label="API token"
            placeholder="wh_…"
            leftSection={<IconKey size={16} />}
            value={token}
            onChange={(e) => setToken(e.currentTarget.value)}
            error={!desktop && !expired ? error : undefined}
            autoFocus
            data-testid="token-input"
          />
          <Checkbox label="Remember on this device" checked={remember} onChange={(e) => setRemember(e.currentTarget.checked)} />
          <Button type="submit" loading={busy} disabled={!token.trim()}>
            Open console
          </Button>
        </Stack>
      </Paper>
    </Center>
  );
}
