/**
 * A profile picture fetched through the media proxy with the Authorization header (an <img src> cannot send it),
 * with the name's initials while it loads or when there is none.
 */
import { Avatar } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useClient } from '../stores/session.ts';

export function ProfileAvatar({ url, name, size = 96, testId }: { url: string | null | undefined; name: string; size?: number; testId?: string }) {
  const client = useClient();
  const [src, setSrc] = useState<string | null>(null);
  useEffect(() => {
    setSrc(null);
    if (!url) return;
    let dropped = false;
    let blobUrl: string | undefined;
    client.mediaBlobUrl(url).then(
      (u) => {
        if (dropped) URL.revokeObjectURL(u);
        else setSrc((blobUrl = u));
      },
      () => undefined, // no picture to show: the initials stay
    );
    return () => {
      dropped = true;
      if (blobUrl) URL.revokeObjectURL(blobUrl);
    };
  }, [client, url]);
  return (
    <Avatar
      src={src}
      size={size}
      radius="50%"
      alt={`Profile picture of ${name}`}
      name={name}
      color="initials"
      data-testid={testId}
      data-loaded={src ? 'true' : 'false'}
    />
  );
}
