/**
 * Writing to a chat: text (Enter sends, Shift+Enter breaks the line), replies, edits of own recent texts,
 * attachments (image / video / audio / document by type), location and contact cards; "send without presence"
 * skips the read receipt, typing indicator and delay. While typing it shows "typing…" to the contact.
 * In a group, typing `@` offers the members: picking one writes `@<digits>`, and every member named so in the text
 * or caption is sent as a mention.
 */

/** The `@…` being typed at the end of `text` (what the mention picker filters by), or undefined. */
export function mentionQuery(text: string): string | undefined {
  return /(?:^|\s)@([^\s@]*)$/.exec(text)?.[1];
}

/** Members matching a mention query (by name or number), at most `max`. */
export function mentionCandidates(participants: GroupParticipant[], query: string, max = 6): GroupParticipant[] {
  const q = query.toLowerCase();
  return participants
    .filter((p) => participantName(p).toLowerCase().includes(q) || p.jid.split('@')[0]!.includes(q))
    .slice(0, max);
}
import { ActionIcon, Button, Checkbox, CloseButton, Group, Menu, Modal, NumberInput, Paper, Stack, Text, Textarea, TextInput, Tooltip } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { IconAddressBook, IconMapPin, IconPaperclip, IconPlus, IconSend } from '@tabler/icons-react';
import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { errorMessage, type SendKind } from '../api/client.ts';
import type { GroupParticipant, Message } from '../api/types.ts';
import { mentionsIn, mentionToken, participantName } from './GroupInfo.tsx';
import { canEdit, useThread } from '../stores/thread.ts';
import { useChats } from '../stores/chats.ts';
import { useClient } from '../stores/session.ts';

const TYPING_REFRESH_MS = 4000;
const TYPING_IDLE_MS = 3000;

export function kindForFile(mimetype: string): SendKind {
  if (mimetype.startsWith('image/')) return 'image';
  if (mimetype.startsWith('video/')) return 'video';
  if (mimetype.startsWith('audio/')) return 'audio';
  return 'document';
}

/** A bubble for a text not yet stored: shown at once, replaced by the API's Message. */
function optimistic(id: string, chatId: string, text: string, quotedMessageId: string | null, local: NonNullable<Message['local']>): Message {
  return {
    id,
    chatId,
    timestamp: Math.floor(Date.now() / 1000),
    fromMe: true,
    senderJid: '',
    senderPushName: '',
    type: 'text',
    kind: 'text',
    rawType: null,
    location: null,
    contacts: null,
    poll: null,
    selection: null,
    album: null,
    albumId: null,
    isForwarded: false,
    text,
    quotedMessageId,
    media: null,
    ack: local.state === 'pending' ? 0 : null,
    mentions: [],
    editedAt: null,
    reactions: [],
    local,
  };
}

function readBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
    r.onerror = () => reject(r.error ?? new Error('could not read the file'));
    r.readAsDataURL(file);
  });
}

export function Composer({
  connectionId,
  chatId,
  disabled,
  participants,
}: {
  connectionId: string;
  chatId: string;
  disabled: boolean;
  /** Members of a group chat (enables @ mentions). */
  participants?: GroupParticipant[] | undefined;
}) {
  const client = useClient();
  const { replyTo, editing, setReplyTo, setEditing, upsert, remove, applyEdit } = useThread();
  const applyMessage = useChats((s) => s.applyMessage);
  const applyChatEdit = useChats((s) => s.applyEdit);
  const [text, setText] = useState('');
  const [skipPresence, setSkipPresence] = useState(false);
  const [busy, setBusy] = useState(false);
  const [sheet, setSheet] = useState<'location' | 'contact' | null>(null);
  const typingSentAt = useRef(0);
  const idleTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const input = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    if (editing) setText(editing.text);
    input.current?.focus();
  }, [editing, replyTo]);

  const stopTyping = () => {
    if (idleTimer.current) clearTimeout(idleTimer.current);
    idleTimer.current = undefined;
    if (typingSentAt.current) {
      typingSentAt.current = 0;
      void client.typingStop(connectionId, chatId).catch(() => undefined);
    }
  };
  useEffect(() => stopTyping, [chatId]);

  const onType = (value: string) => {
    setText(value);
    if (disabled || skipPresence || editing) return;
    const now = Date.now();
    if (value && now - typingSentAt.current > TYPING_REFRESH_MS) {
      typingSentAt.current = now;
      void client.typing(connectionId, chatId).catch(() => undefined);
    }
    if (idleTimer.current) clearTimeout(idleTimer.current);
    idleTimer.current = setTimeout(stopTyping, TYPING_IDLE_MS);
  };

  const sent = (m: Awaited<ReturnType<typeof client.sendText>>) => {
    upsert(m);
    applyMessage(connectionId, { id: m.id, chatId: m.chatId, kind: m.kind, text: m.text, timestamp: m.timestamp, fromMe: true });
  };

  const run = async (what: string, fn: () => Promise<void>) => {
    setBusy(true);
    try {
      await fn();
    } catch (err) {
      notifications.show({ color: 'red', title: `${what} failed`, message: errorMessage(err) });
    } finally {
      setBusy(false);
    }
  };

  const submit = (e?: FormEvent) => {
    e?.preventDefault();
    const body = text.trim();
    if (!body || busy) return;
    stopTyping();
    if (editing) {
      if (!canEdit(editing)) {
        notifications.show({ color: 'orange', message: 'Messages can only be edited within 15 minutes of sending.' });
        setEditing(null);
        return;
      }
      const target = editing;
      void run('Edit', async () => {
        const m = await client.editMessage(connectionId, target.id, { chatId, text: body });
        applyEdit(target.id, m?.text ?? body);
        applyChatEdit(connectionId, chatId, target.id, m?.text ?? body);
        setEditing(null);
        setText('');
      });
      return;
    }
    // An optimistic bubble at once (pending tick); the stored message replaces it when the API answers, or it
    // turns into a failed bubble with Retry. The send itself waits for the presence delay on the server.
    const mentions = participants ? mentionsIn(body, participants) : [];
    const input = {
      chatId,
      text: body,
      ...(replyTo && { replyTo: replyTo.id }),
      ...(skipPresence && { skipPresence: true }),
      ...(mentions.length > 0 && { mentions }),
    };
    const localId = `local-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
    const attempt = () => {
      upsert(optimistic(localId, chatId, body, replyTo?.id ?? null, { state: 'pending' }));
      client.sendText(connectionId, input).then(
        (m) => {
          remove(localId);
          sent(m);
        },
        (err: unknown) => upsert(optimistic(localId, chatId, body, replyTo?.id ?? null, { state: 'failed', error: errorMessage(err), retry: attempt })),
      );
    };
    attempt();
    setReplyTo(null);
    setText('');
  };

  const query = participants && !editing ? mentionQuery(text) : undefined;
  const candidates = query !== undefined && participants ? mentionCandidates(participants, query) : [];
  const pickMention = (p: GroupParticipant) => {
    setText((t) => t.replace(/@([^\s@]*)$/, `${mentionToken(p)} `));
    input.current?.focus();
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing && candidates.length > 0) {
      e.preventDefault();
      pickMention(candidates[0]!);
    } else if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      submit();
    } else if (e.key === 'Escape' && (editing || replyTo)) {
      setEditing(null);
      setReplyTo(null);
      setText('');
    }
  };

  const fileInput = useRef<HTMLInputElement>(null);
  const [picked, setPicked] = useState<File | null>(null);

  /** Sends the previewed file with `caption` (ignored for audio, which WhatsApp shows without one). */
  const sendPicked = (file: File, caption: string) =>
    run('Upload', async () => {
      const base64 = await readBase64(file);
      const kind = kindForFile(file.type || 'application/octet-stream');
      const m = await client.sendMedia(connectionId, kind, {
        chatId,
        base64,
        filename: file.name,
        ...(file.type && { mimetype: file.type }),
        ...(caption.trim() && kind !== 'audio' && { caption: caption.trim() }),
        ...(participants && kind !== 'audio' && mentionsIn(caption, participants).length > 0 && { mentions: mentionsIn(caption, participants) }),
        ...(replyTo && { replyTo: replyTo.id }),
        ...(skipPresence && { skipPresence: true }),
      });
      sent(m);
      setPicked(null);
      setText('');
      setReplyTo(null);
    });

  return (
    <Paper p="sm" radius={0} style={{ borderTop: '1px solid var(--mantine-color-default-border)' }} component="form" onSubmit={submit}>
      {(replyTo || editing) && (
        <Group justify="space-between" mb={6} wrap="nowrap" className="quote" data-testid={editing ? 'editing-banner' : 'reply-banner'}>
          <Stack gap={0} style={{ minWidth: 0 }}>
            <Text size="xs" fw={600}>
              {editing ? 'Editing your message' : `Replying to ${replyTo!.fromMe ? 'yourself' : replyTo!.senderPushName || replyTo!.senderJid}`}
            </Text>
            <Text size="xs" truncate>
              {(editing ?? replyTo)!.text || `[${(editing ?? replyTo)!.type}]`}
            </Text>
          </Stack>
          <CloseButton
            size="sm"
            aria-label="Cancel"
            onClick={() => {
              setEditing(null);
              setReplyTo(null);
              if (editing) setText('');
            }}
          />
        </Group>
      )}
      {candidates.length > 0 && (
        <Paper withBorder p={4} mb={6} role="listbox" aria-label="Mention a member" data-testid="mention-picker">
          {candidates.map((p) => (
            <Button
              key={p.jid}
              variant="subtle"
              size="compact-sm"
              fullWidth
              justify="flex-start"
              role="option"
              aria-selected={false}
              onMouseDown={(e) => e.preventDefault()}
              onClick={() => pickMention(p)}
              data-testid="mention-option"
            >
              {participantName(p)}
              <Text span size="xs" c="dimmed" ml={6} className="mono">
                {mentionToken(p)}
              </Text>
            </Button>
          ))}
        </Paper>
      )}
      <Group align="flex-end" gap="xs" wrap="nowrap">
        <Menu position="top-start" withinPortal disabled={disabled || !!editing}>
          <Menu.Target>
            <ActionIcon variant="default" size="lg" aria-label="Attach" disabled={disabled || !!editing} data-testid="attach-menu">
              <IconPlus size={18} />
            </ActionIcon>
          </Menu.Target>
          <Menu.Dropdown>
            <Menu.Item leftSection={<IconPaperclip size={14} />} onClick={() => fileInput.current?.click()}>
              File, photo, video or audio…
            </Menu.Item>
            <Menu.Item leftSection={<IconMapPin size={14} />} onClick={() => setSheet('location')}>
              Location
            </Menu.Item>
            <Menu.Item leftSection={<IconAddressBook size={14} />} onClick={() => setSheet('contact')}>
              Contact
            </Menu.Item>
          </Menu.Dropdown>
        </Menu>
        <Textarea
          ref={input}
          style={{ flex: 1 }}
          autosize
          minRows={1}
          maxRows={6}
          placeholder={disabled ? 'The connection is not online' : editing ? 'Edit message' : 'Write a message'}
          value={text}
          onChange={(e) => onType(e.currentTarget.value)}
          onKeyDown={onKeyDown}
          disabled={disabled}
          aria-label="Message"
          data-testid="composer-input"
        />
        <Tooltip label={editing ? 'Save edit' : 'Send'}>
          <ActionIcon type="submit" size="lg" loading={busy} disabled={disabled || !text.trim()} aria-label={editing ? 'Save edit' : 'Send'} data-testid="send-button">
            <IconSend size={18} />
          </ActionIcon>
        </Tooltip>
      </Group>
      <Checkbox
        mt={6}
        size="xs"
        label="Send without presence (no read receipt, typing or delay)"
        checked={skipPresence}
        onChange={(e) => setSkipPresence(e.currentTarget.checked)}
        data-testid="skip-presence"
      />
      <input
        ref={fileInput}
        type="file"
        hidden
        aria-label="Choose a file to send"
        onChange={(e) => {
          const file = e.currentTarget.files?.[0] ?? null;
          e.currentTarget.value = '';
          if (file) setPicked(file);
        }}
      />
      <AttachmentPreview
        file={picked}
        initialCaption={text}
        busy={busy}
        onClose={() => setPicked(null)}
        onSend={(caption) => picked && void sendPicked(picked, caption)}
      />
      <LocationSheet
        opened={sheet === 'location'}
        onClose={() => setSheet(null)}
        onSend={(v) =>
          run('Location', async () => {
            sent(await client.sendLocation(connectionId, { chatId, ...v, ...(skipPresence && { skipPresence: true }) }));
            setSheet(null);
          })
        }
      />
      <ContactSheet
        opened={sheet === 'contact'}
        onClose={() => setSheet(null)}
        onSend={(v) =>
          run('Contact', async () => {
            sent(await client.sendContact(connectionId, { chatId, ...v, ...(skipPresence && { skipPresence: true }) }));
            setSheet(null);
          })
        }
      />
    </Paper>
  );
}

/** The picked file before it is sent: an image or video preview (or its name and size), and a caption. */
function AttachmentPreview({
  file,
  initialCaption,
  busy,
  onClose,
  onSend,
}: {
  file: File | null;
  initialCaption: string;
  busy: boolean;
  onClose: () => void;
  onSend: (caption: string) => void;
}) {
  const [caption, setCaption] = useState('');
  const [url, setUrl] = useState<string | null>(null);
  useEffect(() => {
    if (!file) return;
    setCaption(initialCaption);
    const objectUrl = URL.createObjectURL(file);
    setUrl(objectUrl);
    return () => URL.revokeObjectURL(objectUrl);
    // The caption starts from the composer's text, once per picked file.
  }, [file]);
  const kind = file ? kindForFile(file.type || 'application/octet-stream') : 'document';
  return (
    <Modal opened={!!file} onClose={onClose} title="Send a file" centered data-testid="attachment-preview">
      {file && (
        <Stack>
          {kind === 'image' && url && <img src={url} alt={`Preview of ${file.name}`} style={{ maxWidth: '100%', maxHeight: 320, objectFit: 'contain' }} />}
          {kind === 'video' && url && <video src={url} controls style={{ maxWidth: '100%', maxHeight: 320 }} />}
          {kind === 'audio' && url && <audio src={url} controls />}
          <Text size="sm">
            {file.name} · {formatBytes(file.size)}
          </Text>
          {kind !== 'audio' && (
            <TextInput label="Caption" value={caption} onChange={(e) => setCaption(e.currentTarget.value)} data-testid="attachment-caption" />
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button loading={busy} onClick={() => onSend(caption)} data-testid="attachment-send">
              Send
            </Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}

/** `1.2 MB`-style size for people. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

function LocationSheet({ opened, onClose, onSend }: { opened: boolean; onClose: () => void; onSend: (v: { latitude: number; longitude: number; name?: string }) => Promise<void> }) {
  const [lat, setLat] = useState<number | string>('');
  const [lng, setLng] = useState<number | string>('');
  const [name, setName] = useState('');
  const valid = typeof lat === 'number' && typeof lng === 'number';
  return (
    <Modal opened={opened} onClose={onClose} title="Send a location" centered>
      <Stack>
        <NumberInput label="Latitude" min={-90} max={90} decimalScale={6} value={lat} onChange={setLat} />
        <NumberInput label="Longitude" min={-180} max={180} decimalScale={6} value={lng} onChange={setLng} />
        <TextInput label="Name (optional)" value={name} onChange={(e) => setName(e.currentTarget.value)} />
        <Group justify="flex-end">
          <Button disabled={!valid} onClick={() => valid && void onSend({ latitude: lat, longitude: lng, ...(name && { name }) })}>
            Send location
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

function ContactSheet({ opened, onClose, onSend }: { opened: boolean; onClose: () => void; onSend: (v: { name: string; phoneNumber: string }) => Promise<void> }) {
  const [name, setName] = useState('');
  const [phone, setPhone] = useState('');
  const valid = name.trim() && /^\+?[0-9 ()-]{5,}$/.test(phone.trim());
  return (
    <Modal opened={opened} onClose={onClose} title="Send a contact card" centered>
      <Stack>
        <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} />
        <TextInput label="Phone number" placeholder="+15550101" value={phone} onChange={(e) => setPhone(e.currentTarget.value)} />
        <Group justify="flex-end">
          <Button disabled={!valid} onClick={() => void onSend({ name: name.trim(), phoneNumber: phone.trim() })}>
            Send contact
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}
