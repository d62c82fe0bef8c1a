import { Badge, Loader } from '@mantine/core';
import { STATUS_COLORS, STATUS_LABELS } from '../stores/connections.ts';
import { useSession } from '../stores/session.ts';

/**
 * A connection's status as a coloured badge (spinner while it is on its way somewhere); "unknown" in grey while
 * the service does not answer, since the last status seen may no longer be true.
 */
export function StatusBadge({ status: known }: { status: string }) {
  const reachable = useSession((s) => s.reachable);
  const status = reachable ? known : 'unknown';
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
