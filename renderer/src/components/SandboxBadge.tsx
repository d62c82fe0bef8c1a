import { Badge, Tooltip } from '@mantine/core';
import { useSession } from '../stores/session.ts';

/** The "SANDBOX" marker shown everywhere while the service runs in sandbox (test) mode. */
export function SandboxBadge() {
  const sandbox = useSession((s) => s.health?.sandbox);
  if (!sandbox) return null;
  return (
    <Tooltip label="Simulated WhatsApp: nothing reaches real phones">
      <Badge color="orange.5" variant="filled" autoContrast data-testid="sandbox-badge">
        Sandbox
      </Badge>
    </Tooltip>
  );
}
