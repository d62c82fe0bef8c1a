/**
 * "Link with phone number instead" in the pairing panel: the operator enters the account's phone number, the service
 * asks WhatsApp for an 8-character code (POST /connections/:id/pairing-code) and the code is shown big, with a copy
 * button and where to type it on the phone. The QR stays valid meanwhile; the panel moves on once linked.
 */
import { Alert, Button, CopyButton, List, Stack, Text, TextInput } from '@mantine/core';
import { IconCheck, IconCopy } from '@tabler/icons-react';
import { useState, type FormEvent } from 'react';
import { ApiError, errorMessage, type ApiClient } from '../api/client.ts';

export function PhoneCodeLink({ client, connectionId }: { client: ApiClient; connectionId: string }) {
  const [phone, setPhone] = useState('');
  const [code, setCode] = useState<{ value: string; phone: string } | null>(null);
  const [busy, setBusy] = useState(false);
  /** A problem with the number (shown on the field) or with the request (shown as an alert). */
  const [error, setError] = useState<{ field: boolean; message: string } | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const number = phone.trim();
    if (!number) {
      setError({ field: true, message: 'Enter the phone number with its country code' });
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const { code: value } = await client.pairingCode(connectionId, number);
      setCode({ value, phone: number });
    } catch (err) {
      setError({ field: err instanceof ApiError && err.status === 400, message: errorMessage(err) });
    } finally {
      setBusy(false);
    }
  };

  if (code) {
    return (
      <Stack align="center" gap="sm" maw={340} data-testid="pairing-code-panel">
        <Text size="sm" c="dimmed">
          Code for {code.phone}
        </Text>
        <Text
          component="output"
          ff="monospace"
          fz={40}
          fw={700}
          lts={4}
          data-testid="pairing-code"
          aria-label={`Linking code ${code.value.split('').join(' ')}`}
        >
          {code.value}
        </Text>
        <CopyButton value={code.value}>
          {({ copied, copy }) => (
            <Button variant="light" size="xs" onClick={copy} leftSection={copied ? <IconCheck size={14} /> : <IconCopy size={14} />}>
              {copied ? 'Copied' : 'Copy code'}
            </Button>
          )}
        </CopyButton>
        <List size="sm" type="ordered">
          <List.Item>Open WhatsApp on the phone with that number</List.Item>
          <List.Item>Settings → Linked devices → Link a device</List.Item>
          <List.Item>Tap “Link with phone number instead” and type this code</List.Item>
        </List>
        <Button variant="subtle" size="xs" onClick={() => setCode(null)}>
          Use another number
        </Button>
      </Stack>
    );
  }

  return (
    <Stack component="form" onSubmit={submit} gap="sm" w={300} data-testid="pairing-phone-form">
      <TextInput
        label="Phone number"
        description="The WhatsApp account to link, with its country code"
        placeholder="+1 555 0100"
        type="tel"
        autoComplete="tel"
        value={phone}
        onChange={(e) => setPhone(e.currentTarget.value)}
        error={error?.field ? error.message : undefined}
        data-testid="pairing-phone-input"
        data-autofocus
      />
      {error && !error.field && (
        <Alert color="red" title="No code">
          {error.message}
        </Alert>
      )}
      <Button type="submit" loading={busy}>
        Get code
      </Button>
    </Stack>
  );
}
