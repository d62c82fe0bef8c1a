/**
 * Incoming calls as notifications: a `call.received` event shows who is calling (voice or video) with a Reject
 * button (`POST /connections/:id/calls/:callId/reject`); the notification goes away with the call's `call.ended`.
 */
import { Button, Group, Text } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { IconPhoneOff } from '@tabler/icons-react';
import { useState } from 'react';
import { errorMessage, type ApiClient } from './api/client.ts';
import { useChats } from './stores/chats.ts';
import { useConnections } from './stores/connections.ts';

const notificationId = (connectionId: string, callId: string) => `call-${connectionId}-${callId}`;

/** The caller as the operator knows it: the chat's name, else `+<number>`. */
function callerName(connectionId: string, from: string): string {
  const chats = useChats.getState();
  const chat = chats.connectionId === connectionId ? chats.items.find((c) => c.id === from) : undefined;
  return chat?.name || (from.endsWith('@s.whatsapp.net') ? `+${from.split('@')[0]}` : from);
}

function RejectButton({ client, connectionId, callId }: { client: ApiClient; connectionId: string; callId: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const reject = async () => {
    setBusy(true);
    try {
      await client.rejectCall(connectionId, callId);
      notifications.hide(notificationId(connectionId, callId));
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  return (
    <Group gap="xs" mt={6}>
      <Button size="xs" color="red" leftSection={<IconPhoneOff size={14} />} onClick={() => void reject()} loading={busy} data-testid="call-reject">
        Reject
      </Button>
      {error && (
        <Text size="xs" c="red">
          {error}
        </Text>
      )}
    </Group>
  );
}

/** Shows an incoming call (`call.received` payload: `{ callId, from, isVideo, isGroup }`). */
export function showIncomingCall(client: ApiClient, connectionId: string, p: Record<string, unknown>): void {
  const callId = typeof p.callId === 'string' ? p.callId : undefined;
  const from = typeof p.from === 'string' ? p.from : '';
  if (!callId) return;
  const connection = useConnections.getState().items.find((c) => c.id === connectionId);
  const kind = p.isVideo === true ? 'video call' : 'voice call';
  notifications.show({
    id: notificationId(connectionId, callId),
    autoClose: false,
    withCloseButton: true,
    title: `Incoming ${p.isGroup === true ? 'group ' : ''}${kind}`,
    message: (
      <div data-testid="incoming-call" data-call-id={callId}>
        <Text size="sm">
          {callerName(connectionId, from)}
          {connection?.name ? ` → ${connection.name}` : ''}
        </Text>
        <RejectButton client={client} connectionId={connectionId} callId={callId} />
      </div>
    ),
  });
}

/** The call ended (rejected, missed, hung up or answered elsewhere): its notification goes. */
export function endCall(connectionId: string, p: Record<string, unknown>): void {
  if (typeof p.callId === 'string') notifications.hide(notificationId(connectionId, p.callId));
}
