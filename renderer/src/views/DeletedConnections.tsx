/**
 * The Connections view's "Deleted" filter: deleted connections (status `stopped`) as read-only records, from
 * `GET /connections?include=deleted` (the spec's list leaves them out), newest deletion first. Nothing here
 * acts on them: every route but the record itself answers 404 for a deleted connection.
 */
import { Badge, Table, Text } from '@mantine/core';
import { useEffect } from 'react';
import { Empty, ErrorState, Loading } from '../components/StateViews.tsx';
import { useConnections } from '../stores/connections.ts';
import { useClient } from '../stores/session.ts';

export function DeletedConnections() {
  const client = useClient();
  const deleted = useConnections((s) => s.deleted);
  const error = useConnections((s) => s.deletedError);
  const loadDeleted = useConnections((s) => s.loadDeleted);

  useEffect(() => void loadDeleted(client), [client, loadDeleted]);

  if (error) return <ErrorState message={error} onRetry={() => void loadDeleted(client)} />;
  if (deleted === null) return <Loading />;
  if (deleted.length === 0) return <Empty title="No deleted connections">Connections you delete are listed here, read-only.</Empty>;
  return (
    <Table.ScrollContainer minWidth={560}>
      <Table verticalSpacing="sm" data-testid="deleted-connections-table" aria-label="Deleted connections (read-only)">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th>Phone</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th>Created</Table.Th>
            <Table.Th>Deleted</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {deleted.map((c) => (
            <Table.Tr key={c.id} data-testid="deleted-connection-row" data-id={c.id}>
              <Table.Td>
                <Text fw={500}>{c.name ?? <Text span c="dimmed">Unnamed</Text>}</Text>
                <Text size="xs" c="dimmed" className="mono">
                  {c.sessionName}
                </Text>
              </Table.Td>
              <Table.Td>{c.phoneNumber ?? '—'}</Table.Td>
              <Table.Td>
                <Badge color="gray" variant="light" data-testid="status-badge" data-status="stopped">
                  Deleted
                </Badge>
              </Table.Td>
              <Table.Td>
                <Text size="sm">{new Date(c.createdAt).toLocaleString()}</Text>
              </Table.Td>
              <Table.Td>
                <Text size="sm">{new Date(c.updatedAt).toLocaleString()}</Text>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
