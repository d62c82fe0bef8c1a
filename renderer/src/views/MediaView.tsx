/**
 * Message media fetched through the media proxy with the Authorization header (an <img src> cannot send it),
 * shown inline (image, video, audio) or offered as a download (documents). 404 = no longer available.
 */
import { Anchor, Group, Loader, Text } from '@mantine/core';
import { IconFileDownload, IconPhotoOff } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { errorMessage } from '../api/client.ts';
import type { MediaInfo } from '../api/types.ts';
import { useClient } from '../stores/session.ts';

export function MediaView({ media, type }: { media: MediaInfo; type: string }) {
  const client = useClient();
  const [url, setUrl] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const inline = type === 'image' || type === 'video' || type === 'audio' || /^(image|video|audio)\//.test(media.mimetype);

  useEffect(() => {
    if (!inline) return;
    let revoked = false;
    let blobUrl: string | undefined;
    client.mediaBlobUrl(media.url).then(
      (u) => {
        if (revoked) URL.revokeObjectURL(u);
        else setUrl((blobUrl = u));
      },
      (err) => !revoked && setError(errorMessage(err)),
    );
    return () => {
      revoked = true;
      if (blobUrl) URL.revokeObjectURL(blobUrl);
    };
  }, [client, media.url, inline]);

  const download = async () => {
    try {
      const u = await client.mediaBlobUrl(media.url);
      const a = document.createElement('a');
      a.href = u;
      a.download = media.filename ?? 'download';
      a.click();
      setTimeout(() => URL.revokeObjectURL(u), 10_000);
    } catch (err) {
      setError(errorMessage(err));
    }
  };

  if (error)
    return (
      <Group gap={4} c="dimmed">
        <IconPhotoOff size={14} />
        <Text size="xs">{error}</Text>
      </Group>
    );
  if (!inline)
    return (
      <Anchor component="button" type="button" size="sm" onClick={() => void download()} data-testid="media-download">
        <Group gap={4}>
          <IconFileDownload size={16} />
          {media.filename ?? 'Document'}
          {media.size ? ` (${Math.ceil(media.size / 1024)} KB)` : ''}
        </Group>
      </Anchor>
    );
  if (!url) return <Loader size="xs" />;
  if (type === 'video' || media.mimetype.startsWith('video/')) return <video src={url} controls style={{ maxWidth: '100%', borderRadius: 6 }} />;
  if (type === 'audio' || media.mimetype.startsWith('audio/')) return <audio src={url} controls />;
  return <img src={url} alt={media.filename ?? 'image'} style={{ maxWidth: '100%', maxHeight: 320, borderRadius: 6, display: 'block' }} data-testid="media-image" />;
}
