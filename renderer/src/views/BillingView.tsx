/** Billing: slots used / available, changing the slot count (showing the proration), checkout and portal. */
import { Alert, Button, Group, NumberInput, Paper, Progress, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useState } from 'react';
import { errorMessage } from '../api/client.ts';
import { openExternal } from '../api/desktop.ts';
import type { BillingStatus, SlotChange } from '../api/types.ts';
import { ErrorState, Loading } from '../components/StateViews.tsx';
import { useAsync } from '../hooks.ts';
import { useConnections } from '../stores/connections.ts';
import { useClient } from '../stores/session.ts';

/** `amount` in major units (PUT /billing/slots `proratedAmount`). */
export function formatAmount(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency: currency.toUpperCase() }).format(amount);
  } catch {
    return `${amount.toFixed(2)} ${currency}`;
  }
}

export function slotFigures(s: BillingStatus, connections: number): { slots: number; used: number; available: number } {
  const slots = s.slots;
  const used = s.used ?? connections;
  const available = s.available ?? Math.max(0, slots - used);
  return { slots, used, available };
}

function Stat({ label, value }: { label: string; value: string | number }) {
  return (
    <Paper withBorder p="md">
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <Text size="xl" fw={700} data-testid={`billing-${label.toLowerCase()}`}>
        {value}
      </Text>
    </Paper>
  );
}

export function BillingView() {
  const client = useClient();
  const connections = useConnections((s) => s.items.length);
  const status = useAsync(() => client.billingStatus(), [client]);
  const [quantity, setQuantity] = useState<number | string>('');
  const [result, setResult] = useState<SlotChange | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const figures = status.data ? slotFigures(status.data, connections) : null;
  // The local provider sets slots here, without payments: no charges, no payment pages.
  const local = status.data?.provider === 'local';

  const change = async () => {
    if (typeof quantity !== 'number') return;
    setBusy(true);
    setError(null);
    try {
      const r = await client.setSlots(quantity);
      setResult(r);
      void status.reload();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  const external = (fn: () => Promise<{ url: string }>) => async () => {
    try {
      await openExternal((await fn()).url);
    } catch (err) {
      notifications.show({ color: 'red', title: 'Could not open the payment page', message: errorMessage(err) });
    }
  };

  return (
    <Stack maw={720}>
      <Title order={1} size="h3">Billing</Title>
      {status.error && <ErrorState message={status.error} onRetry={() => void status.reload()} />}
      {status.loading && !status.data && <Loading />}
      {figures && (
        <>
          <SimpleGrid cols={{ base: 1, xs: 3 }}>
            <Stat label="Slots" value={figures.slots} />
            <Stat label="Used" value={figures.used} />
            <Stat label="Available" value={figures.available} />
          </SimpleGrid>
          <Progress value={figures.slots ? (100 * figures.used) / figures.slots : 0} aria-label="Slots used" />
          {(status.data?.provider || status.data?.subscriptionStatus) && (
            <Text size="sm" c="dimmed">
              {[status.data?.provider && `Provider: ${status.data.provider}`, status.data?.subscriptionStatus && `Subscription: ${status.data.subscriptionStatus}`]
                .filter(Boolean)
                .join(' · ')}
            </Text>
          )}
          <Paper withBorder p="md">
            <Stack>
              <Text fw={600}>Change the number of slots</Text>
              <Text size="sm" c="dimmed" data-testid="slots-explainer">
                {local
                  ? 'Slots are set locally on this machine (local billing provider): no payment is involved.'
                  : 'Charged or credited at once, prorated for the rest of the period.'}
              </Text>
              <Group align="flex-end">
                <NumberInput label="Slots" min={0} max={100} value={quantity} onChange={setQuantity} placeholder={String(figures.slots)} w={140} data-testid="slots-input" />
                <Button onClick={() => void change()} loading={busy} disabled={typeof quantity !== 'number'} data-testid="slots-apply">
                  Apply
                </Button>
              </Group>
              {error && (
                <Alert color="red" role="alert">
                  {error}
                </Alert>
              )}
              {result && (
                <Alert color={result.status === 'unchanged' ? 'gray' : 'green'} data-testid="slots-result">
                  {result.status === 'unchanged'
                    ? `Unchanged: ${result.slots} slots.`
                    : local
                      ? `Set to ${result.slots} slots.`
                      : `${result.status === 'upgraded' ? 'Upgraded' : 'Downgraded'} to ${result.slots} slots. ${
                          result.proratedAmount >= 0 ? 'Charged now' : 'Credited now'
                        }: ${formatAmount(Math.abs(result.proratedAmount), result.currency)}.`}
                </Alert>
              )}
            </Stack>
          </Paper>
          {!local && (
            <Group data-testid="payment-actions">
              <Button variant="default" onClick={external(client.checkout)}>
                Add a payment method
              </Button>
              <Button variant="default" onClick={external(client.portal)}>
                Open billing portal
              </Button>
            </Group>
          )}
        </>
      )}
    </Stack>
  );
}
