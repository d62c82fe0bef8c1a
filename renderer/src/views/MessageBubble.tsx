/**
 * One message: quote, media, text, time + ticks, reactions, and its actions (reply, react, edit, forward, delete for
 * everyone).
 */
import { ActionIcon, Anchor, Badge, Button, Group, Menu, Modal, Text, TextInput } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import {
  IconArrowBackUp,
  IconArrowForwardUp,
  IconChecks,
  IconCheck,
  IconClock,
  IconDots,
  IconMoodSmile,
  IconPencil,
  IconTrash,
} from '@tabler/icons-react';
import { memo, useState } from 'react';
import { errorMessage } from '../api/client.ts';
import type { Message } from '../api/types.ts';
import { useChats } from '../stores/chats.ts';
import { canEdit, groupReactions, useThread } from '../stores/thread.ts';
import { useClient } from '../stores/session.ts';
import { MediaView } from './MediaView.tsx';

export const QUICK_REACTIONS = ['👍', '❤️', '😂', '😮', '🙏'];

function Ticks({ ack }: { ack: number | null }) {
  if (ack === null) return null;
  if (ack <= 1) return <IconClock size={12} aria-label="pending" />;
  if (ack === 2) return <IconCheck size={12} aria-label="sent" />;
  return (
    <IconChecks
      size={12}
      aria-label={ack >= 4 ? 'read' : 'delivered'}
      color={ack >= 4 ? 'var(--mantine-color-blue-6)' : undefined}
    />
  );
}

const URL_RE = /\bhttps?:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]]/g;

/** `text` with its http(s) links as anchors (opened outside the console, without a referrer). */
export function Linkified({ text }: { text: string }) {
  const parts: Array<string | { url: string }> = [];
  let last = 0;
  for (const match of text.matchAll(URL_RE)) {
    if (match.index > last) parts.push(text.slice(last, match.index));
    parts.push({ url: match[0] });
    last = match.index + match[0].length;
  }
  if (last < text.length) parts.push(text.slice(last));
  return (
    <>
      {parts.map((p, i) =>
        typeof p === 'string' ? (
          p
        ) : (
          <Anchor key={i} href={p.url} target="_blank" rel="noopener noreferrer" data-testid="message-link">
            {p.url}
          </Anchor>
        ),
      )}
    </>
  );
}

function MessageBody({ m }: { m: Message }) {
  if (m.kind === 'revoked') {
    return (
      <Text size="sm" fs="italic" c="dimmed" data-testid="revoked">
        This message was deleted
      </Text>
    );
  }
  if (m.type === 'location') return <Text size="sm">📍 {m.text || 'Location'}</Text>;
  if (m.type === 'contact') return <Text size="sm">👤 {m.text || 'Contact card'}</Text>;
  return m.text ? (
    <Text size="sm" style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }}>
      <Linkified text={m.text} />
    </Text>
  ) : null;
}

/** Who sent `m`, as the thread names them. */
export function senderName(m: Message): string {
  return m.fromMe ? 'You' : m.senderPushName || m.senderJid.split('@')[0] || m.senderJid;
}

export const MessageBubble = memo(function MessageBubble({
  message: m,
  quoted,
  connectionId,
}: {
  message: Message;
  quoted: Message | undefined;
  connectionId: string;
}) {
  const client = useClient();
  const setReplyTo = useThread((s) => s.setReplyTo);
  const setEditing = useThread((s) => s.setEditing);
  const upsert = useThread((s) => s.upsert);
  const editable = canEdit(m);
  const revocable = m.kind !== 'revoked' && (m.fromMe || m.chatId.endsWith('@g.us'));
  const [forwarding, setForwarding] = useState(false);
  const [forwardTo, setForwardTo] = useState('');
  const reactions = groupReactions(m);
  const time = new Date(m.timestamp * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  const who = senderName(m);

  const react = async (emoji: string) => {
    try {
      const updated = await client.react(connectionId, { chatId: m.chatId, messageId: m.id, emoji });
      if (updated?.id === m.id) upsert(updated);
    } catch (err) {
      notifications.show({ color: 'red', title: 'Reaction failed', message: errorMessage(err) });
    }
  };

  const revoke = async () => {
    try {
      upsert(await client.revokeMessage(connectionId, m.id, m.chatId));
      useChats.getState().applyRevoke(connectionId, m.chatId, m.id);
    } catch (err) {
      notifications.show({ color: 'red', title: 'Delete failed', message: errorMessage(err) });
    }
  };

  const forward = async () => {
    try {
      const sent = await client.forward(connectionId, { chatId: forwardTo.trim(), messageId: m.id, fromChatId: m.chatId });
      setForwarding(false);
      setForwardTo('');
      if (sent.chatId === m.chatId) upsert(sent);
      notifications.show({ color: 'teal', title: 'Forwarded', message: `Forwarded to ${sent.chatId}` });
    } catch (err) {
      notifications.show({ color: 'red', title: 'Forward failed', message: errorMessage(err) });
    }
  };

  return (
    <div
      className={`bubble ${m.fromMe ? 'bubble-out' : 'bubble-in'}`}
      data-testid="message"
      data-message-id={m.id}
      data-from-me={m.fromMe}
      role="article"
      aria-label={`${who} at ${time}`}
    >
      {!m.fromMe && m.chatId.endsWith('@g.us') && (
        <Text size="xs" fw={600} c="teal" data-testid="message-sender">
          {m.senderPushName || (m.senderJid.endsWith('@s.whatsapp.net') ? `+${m.senderJid.split('@')[0]}` : m.senderJid)}
        </Text>
      )}
      {m.quotedMessageId && (
        <div className="quote" data-testid="quote">
          {quoted ? (
            <>
              <Text size="xs" fw={600}>
                {quoted.fromMe ? 'You' : quoted.senderPushName || quoted.senderJid}
              </Text>
              <Text size="xs" lineClamp={2} {...(quoted.kind === 'revoked' && { fs: 'italic' })}>
                {quoted.kind === 'revoked' ? 'This message was deleted' : quoted.text || `[${quoted.type}]`}
              </Text>
            </>
          ) : (
            <Text size="xs" fs="italic">
              Reply to an earlier message
            </Text>
          )}
        </div>
      )}
      {m.isForwarded && (
        <Group gap={2} data-testid="forwarded">
          <IconArrowForwardUp size={12} />
          <Text size="xs" fs="italic" c="dimmed">
            Forwarded
          </Text>
        </Group>
      )}
      {m.media && <MediaView media={m.media} type={m.type} />}
      <MessageBody m={m} />
      <Group gap={4} justify="flex-end" wrap="nowrap" mt={2}>
        {m.kind !== 'revoked' && (m.edited || m.editedAt != null) && (
          <Text size="xs" c="dimmed">
            edited
          </Text>
        )}
        <Text size="xs" c="dimmed">
          {time}
        </Text>
        {m.fromMe && !m.local && <Ticks ack={m.ack} />}
        {m.local?.state === 'pending' && <IconClock size={12} aria-label="sending" data-testid="pending-tick" />}
        {!m.local && (
          <Menu position={m.fromMe ? 'bottom-end' : 'bottom-start'} withinPortal>
            <Menu.Target>
              <ActionIcon
                size="xs"
                variant="subtle"
                color="gray"
                aria-label={`Actions for the message from ${who} at ${time}`}
                data-testid="message-actions"
              >
                <IconDots size={12} />
              </ActionIcon>
            </Menu.Target>
            <Menu.Dropdown>
              <Menu.Item leftSection={<IconArrowBackUp size={14} />} onClick={() => setReplyTo(m)}>
                Reply
              </Menu.Item>
              {editable && (
                <Menu.Item
                  leftSection={<IconPencil size={14} />}
                  onClick={() => setEditing(m)}
                  data-testid="edit-message"
                >
                  Edit
                </Menu.Item>
              )}
              {m.kind !== 'revoked' && (
                <Menu.Item leftSection={<IconArrowForwardUp size={14} />} onClick={() => setForwarding(true)} data-testid="forward-message">
                  Forward
                </Menu.Item>
              )}
              {revocable && (
                <Menu.Item leftSection={<IconTrash size={14} />} color="red" onClick={() => void revoke()} data-testid="revoke-message">
                  Delete for everyone
                </Menu.Item>
              )}
              <Menu.Label>
                <Group gap={4}>
                  <IconMoodSmile size={12} /> React
                </Group>
              </Menu.Label>
              <Group gap={2} px="xs" pb={4}>
                {QUICK_REACTIONS.map((e) => (
                  <Menu.Item
                    key={e}
                    w="auto"
                    px={6}
                    py={2}
                    onClick={() => void react(e)}
                    aria-label={`React ${e}`}
                    data-testid="react-option"
                  >
                    {e}
                  </Menu.Item>
                ))}
              </Group>
            </Menu.Dropdown>
          </Menu>
        )}
      </Group>
      {m.local?.state === 'failed' && (
        <Group gap={6} justify="flex-end" mt={2} data-testid="send-failed">
          <Text size="xs" c="red">
            Not sent: {m.local.error}
          </Text>
          {m.local.retry && (
            <Anchor component="button" size="xs" onClick={m.local.retry} data-testid="retry-send">
              Retry
            </Anchor>
          )}
        </Group>
      )}
      {reactions.length > 0 && (
        <Group gap={4} mt={2}>
          {reactions.map(([e, n]) => (
            <Badge key={e} size="sm" variant="default" data-testid="reaction">
              {e} {n > 1 ? n : ''}
            </Badge>
          ))}
        </Group>
      )}
      <Modal opened={forwarding} onClose={() => setForwarding(false)} title="Forward message" size="sm">
        <TextInput
          label="To"
          description="A phone number in international format or a JID"
          placeholder="+15550101"
          value={forwardTo}
          onChange={(e) => setForwardTo(e.currentTarget.value)}
          data-testid="forward-to"
        />
        <Group justify="flex-end" mt="md">
          <Button onClick={() => void forward()} disabled={!forwardTo.trim()} data-testid="forward-send">
            Forward
          </Button>
        </Group>
      </Modal>
    </div>
  );
});
