/**
 * Settings › WhatsApp profile: the linked account's own push name, about text and picture, for one online
 * connection (`GET`/`PATCH /connections/:id/me`, `PUT /connections/:id/me/picture`). Contacts see the new name on
 * the account's next messages, the about and picture when they look at its profile.
 */
import { Alert, Button, FileButton, Group, Paper, Select, Stack, Text, Textarea, TextInput } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { IconPhotoUp } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { errorMessage } from '../api/client.ts';
import type { Profile } from '../api/types.ts';
import { ProfileAvatar } from '../components/ProfileAvatar.tsx';
import { Loading } from '../components/StateViews.tsx';
import { useAsync } from '../hooks.ts';
import { useConnections } from '../stores/connections.ts';
import { useClient } from '../stores/session.ts';

/** WhatsApp's limits, as the API checks them. */
const MAX_NAME = 25;
const MAX_ABOUT = 139;

/** A file as a data: URL (the API takes base64 or a data: URL). */
function readAsDataUrl(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error('The file could not be read'));
    reader.readAsDataURL(file);
  });
}

export function ProfileSettings() {
  const items = useConnections((s) => s.items);
  const selectedId = useConnections((s) => s.selectedId);
  const online = items.filter((c) => c.status === 'online');
  const [chosen, setChosen] = useState<string | null>(null);
  const connectionId = online.find((c) => c.id === chosen)?.id ?? online.find((c) => c.id === selectedId)?.id ?? online[0]?.id ?? null;
  return (
    <Paper withBorder p="md" data-testid="own-profile">
      <Stack gap="sm">
        <Text fw={600}>WhatsApp profile</Text>
        {online.length === 0 && (
          <Text size="sm" c="dimmed">
            Link a connection (and wait until it is online) to change the account’s name, about text and picture.
          </Text>
        )}
        {online.length > 1 && (
          <Select
            label="Account"
            data={online.map((c) => ({ value: c.id, label: `${c.name ?? 'Connection'}${c.phoneNumber ? ` · ${c.phoneNumber}` : ''}` }))}
            value={connectionId}
            onChange={setChosen}
            allowDeselect={false}
            data-testid="own-profile-connection"
          />
        )}
        {connectionId && <ProfileEditor key={connectionId} connectionId={connectionId} />}
      </Stack>
    </Paper>
  );
}

function ProfileEditor({ connectionId }: { connectionId: string }) {
  const client = useClient();
  const profile = useAsync<Profile>(() => client.me(connectionId), [client, connectionId]);
  const p = profile.data;
  const [name, setName] = useState('');
  const [about, setAbout] = useState('');
  const [saving, setSaving] = useState(false);
  const [uploading, setUploading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!p) return;
    setName(p.pushName);
    setAbout(p.about ?? '');
  }, [p]);

  if (profile.loading && !p) return <Loading label="Loading the profile…" />;
  if (!p) return <Alert color="red">{profile.error ?? 'The profile could not be loaded'}</Alert>;

  const changes: { pushName?: string; about?: string } = {};
  if (name.trim() && name.trim() !== p.pushName) changes.pushName = name.trim();
  if (about.trim() && about !== (p.about ?? '')) changes.about = about;
  const dirty = Object.keys(changes).length > 0;

  const save = async () => {
    setSaving(true);
    setError(null);
    try {
      profile.setData(await client.updateMe(connectionId, changes));
      notifications.show({ color: 'green', message: 'Profile saved' });
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setSaving(false);
    }
  };

  const upload = async (file: File | null) => {
    if (!file) return;
    setUploading(true);
    setError(null);
    try {
      profile.setData(await client.setMyPicture(connectionId, await readAsDataUrl(file)));
      notifications.show({ color: 'green', message: 'Profile picture changed' });
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setUploading(false);
    }
  };

  return (
    <Stack gap="sm">
      <Group align="center" gap="md">
        <ProfileAvatar url={p.pictureUrl} name={p.pushName || p.id} size={96} testId="own-picture" />
        <FileButton onChange={(f) => void upload(f)} accept="image/jpeg,image/png">
          {(props) => (
            <Button {...props} variant="default" leftSection={<IconPhotoUp size={16} />} loading={uploading} data-testid="own-picture-change">
              Change picture
            </Button>
          )}
        </FileButton>
      </Group>
      <TextInput
        label="Name"
        description="The name contacts see on your messages"
        value={name}
        maxLength={MAX_NAME}
        onChange={(e) => setName(e.currentTarget.value)}
        data-testid="own-name"
      />
      <Textarea
        label="About"
        value={about}
        maxLength={MAX_ABOUT}
        autosize
        minRows={2}
        onChange={(e) => setAbout(e.currentTarget.value)}
        data-testid="own-about"
      />
      {error && (
        <Alert color="red" data-testid="own-profile-error">
          {error}
        </Alert>
      )}
      <Group>
        <Button onClick={() => void save()} loading={saving} disabled={!dirty} data-testid="own-profile-save">
          Save
        </Button>
      </Group>
    </Stack>
  );
}
