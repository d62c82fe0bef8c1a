/** Header select of the connection that Chats and Webhooks act on. */
import { Select } from '@mantine/core';
import { useConnections } from '../stores/connections.ts';

export function connectionLabel(c: { name: string | null; phoneNumber: string | null; id: string }): string {
  return c.name ?? c.phoneNumber ?? c.id.slice(0, 8);
}

export function ConnectionPicker() {
  const items = useConnections((s) => s.items);
  const selectedId = useConnections((s) => s.selectedId);
  const select = useConnections((s) => s.select);
  if (items.length === 0) return null;
  return (
    <Select
      aria-label="Current connection"
      size="xs"
      w={{ base: 120, sm: 200 }}
      data={items.map((c) => ({ value: c.id, label: `${connectionLabel(c)}${c.phoneNumber && c.name ? ` (${c.phoneNumber})` : ''}` }))}
      value={selectedId}
      onChange={(v) => select(v)}
      allowDeselect={false}
      data-testid="connection-picker"
    />
  );
}
