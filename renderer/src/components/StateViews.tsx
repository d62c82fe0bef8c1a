/** Shared loading / empty / error states, so every view looks and reads the same. */
import { Alert, Button, Center, Loader, Stack, Text } from '@mantine/core';
import { IconAlertTriangle, IconInbox } from '@tabler/icons-react';
import type { ReactNode } from 'react';

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <Center p="xl">
      <Stack align="center" gap="xs">
        <Loader size="sm" />
        <Text size="sm" c="dimmed">
          {label}
        </Text>
      </Stack>
    </Center>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <Center p="xl">
      <Stack align="center" gap={4} maw={420}>
        <IconInbox size={32} opacity={0.5} />
        <Text fw={500}>{title}</Text>
        {children && (
          <Text size="sm" c="dimmed" ta="center" component="div">
            {children}
          </Text>
        )}
      </Stack>
    </Center>
  );
}

export function ErrorState({ message, onRetry }: { message: string; onRetry?: () => void }) {
  return (
    <Alert color="red" icon={<IconAlertTriangle size={18} />} title="Something went wrong" role="alert">
      <Stack gap="xs" align="flex-start">
        <Text size="sm">{message}</Text>
        {onRetry && (
          <Button size="xs" variant="light" color="red" onClick={onRetry}>
            Try again
          </Button>
        )}
      </Stack>
    </Alert>
  );
}
