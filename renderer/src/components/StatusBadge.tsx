import { Badge, Loader } from '@mantine/core';
import { STATUS_COLORS, STATUS_LABELS } from '../stores/connections.ts';

/** A connection's status as a coloured badge (spinner while it is on its way somewhere). */
export function StatusBadge({ status }: { status: string }) {
  const busy = status === 'starting' || status === 'connected' || status === 'reconnecting';
  return (
    <Badge
      color={STATUS_COLORS[status] ?? 'gray'}
      variant="light"
      leftSection={busy ? <Loader size={10} color={STATUS_COLORS[status]} /> : undefined}
      data-testid="status-badge"
      data-status={status}
    >
      {STATUS_LABELS[status] ?? status}
    </Badge>
  );
}
