/**
 * The contact panel of a 1:1 chat, opened from the thread header: picture, name (and the push name the contact
 * set, when it differs), number, about text (`GET /connections/:id/contacts/:jid/profile`, cached by the service
 * for 24 h; Refresh asks WhatsApp again) and Block / Unblock (the block list as WhatsApp's server keeps it).
 */
import { ActionIcon, Button, Drawer, Group, Stack, Text, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { IconBan, IconLockOpen, IconRefresh, IconUser } from '@tabler/icons-react';
import { useState } from 'react';
import { errorMessage } from '../api/client.ts';
import type { ContactProfile } from '../api/types.ts';
import { ProfileAvatar } from '../components/ProfileAvatar.tsx';
import { ErrorState, Loading } from '../components/StateViews.tsx';
import { useAsync } from '../hooks.ts';
import { useClient } from '../stores/session.ts';

/** `+15550101` for a phone-number JID, else the JID. */
export function displayNumber(jid: string): string {
  return jid.endsWith('@s.whatsapp.net') ? `+${jid.split('@')[0]!.split(':')[0]!}` : jid;
}

/** The thread header's Contact info button and the panel it opens (1:1 chats). */
export function ContactInfoButton({ connectionId, chatId, chatName, online }: { connectionId: string; chatId: string; chatName: string; online: boolean }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <ActionIcon variant="subtle" onClick={() => setOpen(true)} aria-label="Contact info" data-testid="contact-info-open" disabled={!online}>
        <IconUser size={18} />
      </ActionIcon>
      {open && <ContactPanel connectionId={connectionId} chatId={chatId} chatName={chatName} onClose={() => setOpen(false)} />}
    </>
  );
}

function ContactPanel({ connectionId, chatId, chatName, onClose }: { connectionId: string; chatId: string; chatName: string; onClose: () => void }) {
  const client = useClient();
  const [refresh, setRefresh] = useState(0);
  const profile = useAsync<ContactProfile>(() => client.contactProfile(connectionId, chatId, refresh > 0), [client, connectionId, chatId, refresh]);
  const blocklist = useAsync<string[]>(() => client.blocklist(connectionId), [client, connectionId]);
  const [busy, setBusy] = useState(false);
  const p = profile.data;
  const jid = p?.jid ?? chatId;
  const blocked = blocklist.data?.includes(jid);
  const name = p?.name || chatName || displayNumber(jid);

  const toggleBlock = async () => {
    setBusy(true);
    try {
      const res = await client.setBlocked(connectionId, jid, !blocked);
      blocklist.setData(res.blocked ? [...(blocklist.data ?? []), res.jid] : (blocklist.data ?? []).filter((j) => j !== res.jid));
      notifications.show({ color: res.blocked ? 'orange' : 'green', message: `${name} is ${res.blocked ? 'blocked' : 'unblocked'}` });
    } catch (err) {
      notifications.show({ color: 'red', title: 'Could not change the block list', message: errorMessage(err) });
    } finally {
      setBusy(false);
    }
  };

  return (
    <Drawer opened onClose={onClose} position="right" title="Contact info" data-testid="contact-info">
      {profile.loading && !p && <Loading label="Loading the profile…" />}
      {profile.error && <ErrorState message={profile.error} onRetry={() => void profile.reload()} />}
      {p && (
        <Stack gap="sm" align="center">
          <ProfileAvatar url={p.pictureUrl} name={name} size={160} testId="contact-picture" />
          <Title order={3} data-testid="contact-name" ta="center">
            {name}
          </Title>
          {p.pushName && p.pushName !== name && (
            <Text size="sm" c="dimmed" data-testid="contact-push-name">
              ~{p.pushName}
            </Text>
          )}
          <Text size="sm" className="mono">
            {displayNumber(p.jid)}
          </Text>
          <Stack gap={2} w="100%">
            <Text size="xs" c="dimmed">
              About
            </Text>
            <Text size="sm" c={p.about ? undefined : 'dimmed'} style={{ whiteSpace: 'pre-wrap' }} data-testid="contact-about">
              {p.about ?? 'No about text'}
            </Text>
          </Stack>
          <Group w="100%" justify="space-between">
            <Button
              variant="light"
              color={blocked ? 'green' : 'red'}
              leftSection={blocked ? <IconLockOpen size={16} /> : <IconBan size={16} />}
              onClick={() => void toggleBlock()}
              loading={busy}
              disabled={blocklist.data === undefined}
              data-testid="contact-block"
              data-blocked={blocked ? 'true' : 'false'}
            >
              {blocked ? 'Unblock' : 'Block'}
            </Button>
            <Button
              variant="subtle"
              leftSection={<IconRefresh size={16} />}
              onClick={() => setRefresh((n) => n + 1)}
              loading={profile.loading}
              data-testid="contact-refresh"
            >
              Refresh
            </Button>
          </Group>
          {blocklist.error && (
            <Text size="xs" c="red">
              Block list: {blocklist.error}
            </Text>
          )}
        </Stack>
      )}
    </Drawer>
  );
}
