/** A search snippet (`GET …/search`) with its «…» matches as <mark>: text only, no HTML is interpreted. */
import { Text, type MantineSize } from '@mantine/core';
import { Fragment, type ReactNode } from 'react';

export function Snippet({ text, size = 'sm', prefix }: { text: string; size?: MantineSize; prefix?: string }): ReactNode {
  const parts = text.split(/«|»/);
  return (
    <Text size={size} className="search-snippet" lineClamp={2}>
      {prefix}
      {parts.map((p, i) => (i % 2 === 1 ? <mark key={i}>{p}</mark> : <Fragment key={i}>{p}</Fragment>))}
    </Text>
  );
}
