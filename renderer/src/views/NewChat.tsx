/**
 * "New chat": start a conversation by phone number (checked with the API's number check, the refusal shown
 * inline) or by picking one of the connection's contacts. Picking opens the thread; the chat appears in the list
 * with its first message.
 */
import { Button, Divider, Modal, ScrollArea, Stack, Text, TextInput, UnstyledButton } from '@mantine/core';
import { IconSearch } from '@tabler/icons-react';
import { useMemo, useState, type FormEvent } from 'react';
import { errorMessage } from '../api/client.ts';
import { useAsync } from '../hooks.ts';
import { useClient } from '../stores/session.ts';

export function NewChat({ connectionId, opened, onClose, onOpen }: { connectionId: string; opened: boolean; onClose: () => void; onOpen: (chatId: string) => void }) {
  const client = useClient();
  const [number, setNumber] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [filter, setFilter] = useState('');
  const contacts = useAsync(() => (opened ? client.contacts(connectionId) : Promise.resolve([])), [client, connectionId, opened]);
  const shown = useMemo(() => {
    const f = filter.trim().toLowerCase();
    const people = (contacts.data ?? []).filter((c) => !c.isGroup);
    return f ? people.filter((c) => c.name.toLowerCase().includes(f) || c.phoneNumber.includes(f)) : people;
  }, [contacts.data, filter]);

  const close = () => {
    setNumber('');
    setError(null);
    setFilter('');
    onClose();
  };
  const start = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const [result] = await client.checkNumbers(connectionId, [number.trim()]);
      if (!result?.exists || !result.jid) setError(`${result?.phoneNumber ?? number.trim()} is not on WhatsApp`);
      else {
        onOpen(result.jid);
        close();
      }
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal opened={opened} onClose={close} title="New chat" centered data-testid="new-chat-dialog">
      <Stack>
        <form onSubmit={(e) => void start(e)}>
          <Stack gap="xs">
            <TextInput
              label="Phone number"
              description="International format, e.g. +15550101"
              placeholder="+15550101"
              value={number}
              onChange={(e) => {
                setNumber(e.currentTarget.value);
                setError(null);
              }}
              error={error}
              data-testid="new-chat-number"
              autoFocus
            />
            <Button type="submit" loading={busy} disabled={!number.trim()} data-testid="new-chat-start">
              Start chat
            </Button>
          </Stack>
        </form>
        <Divider label="or pick a contact" labelPosition="center" />
        <TextInput size="xs" placeholder="Filter contacts" leftSection={<IconSearch size={14} />} value={filter} onChange={(e) => setFilter(e.currentTarget.value)} aria-label="Filter contacts" />
        <ScrollArea.Autosize mah={260}>
          {contacts.error && (
            <Text size="sm" c="red">
              {contacts.error}
            </Text>
          )}
          {contacts.data && shown.length === 0 && (
            <Text size="sm" c="dimmed">
              No contacts
            </Text>
          )}
          {shown.map((c) => (
            <UnstyledButton
              key={c.jid}
              className="chat-item"
              w="100%"
              px="sm"
              py={6}
              onClick={() => {
                onOpen(c.jid);
                close();
              }}
              data-testid="new-chat-contact"
            >
              <Text size="sm">{c.name || c.phoneNumber}</Text>
              <Text size="xs" c="dimmed">
                {c.phoneNumber}
              </Text>
            </UnstyledButton>
          ))}
        </ScrollArea.Autosize>
      </Stack>
    </Modal>
  );
}
