/**
 * The group info panel of a group chat, opened from the thread header: subject, description, and the members with
 * their admin badges (from `GET /connections/:id/groups/:groupId`, which follows WhatsApp's group notifications).
 * Also the shared pieces the composer's @ mentions use: who a member is and how a mention names them in the text.
 */
import { Badge, Drawer, Group, ScrollArea, Stack, Text, Title } from '@mantine/core';
import type { GroupInfo, GroupParticipant } from '../api/types.ts';
import { ErrorState, Loading } from '../components/StateViews.tsx';
import type { Async } from '../hooks.ts';

/** A member's display name: contact or push name, else their number, else the JID's user part. */
export function participantName(p: GroupParticipant): string {
  return p.name || p.phoneNumber || p.jid.split('@')[0]!;
}

/** How a mention of `p` reads in the text: `@<digits>` (what WhatsApp clients write and turn into a name). */
export function mentionToken(p: GroupParticipant): string {
  return `@${p.jid.split('@')[0]!}`;
}

/** The JIDs of the members whose mention token occurs in `text` (as a whole word). */
export function mentionsIn(text: string, participants: GroupParticipant[]): string[] {
  return participants
    .filter((p) => new RegExp(`${mentionToken(p)}(?![\\p{L}\\p{N}])`, "u").test(text))
    .map((p) => p.jid);
}

export function GroupInfoPanel({ opened, onClose, group }: { opened: boolean; onClose: () => void; group: Async<GroupInfo | undefined> }) {
  const g = group.data;
  return (
    <Drawer opened={opened} onClose={onClose} position="right" title="Group info" data-testid="group-info">
      {group.loading && !g && <Loading label="Loading the group…" />}
      {group.error && <ErrorState message={group.error} />}
      {g && (
        <Stack gap="sm">
          <Title order={3} data-testid="group-subject">
            {g.subject}
          </Title>
          <Text size="sm" c={g.description ? undefined : 'dimmed'} style={{ whiteSpace: 'pre-wrap' }} data-testid="group-description">
            {g.description || 'No description'}
          </Text>
          <Text size="xs" c="dimmed">
            {g.participants.length} participants{g.addressingMode === 'lid' ? ' · members named by LID' : ''}
          </Text>
          <ScrollArea.Autosize mah="60vh">
            <Stack gap={6} role="list" aria-label="Participants">
              {g.participants.map((p) => (
                <Group key={p.jid} justify="space-between" wrap="nowrap" role="listitem" data-testid="group-participant">
                  <Stack gap={0} style={{ minWidth: 0 }}>
                    <Text size="sm" truncate>
                      {participantName(p)}
                    </Text>
                    <Text size="xs" c="dimmed" className="mono" truncate>
                      {p.phoneNumber ?? p.jid}
                    </Text>
                  </Stack>
                  {p.isSuperAdmin ? (
                    <Badge size="sm" variant="filled">
                      Owner
                    </Badge>
                  ) : p.isAdmin ? (
                    <Badge size="sm" variant="light">
                      Admin
                    </Badge>
                  ) : null}
                </Group>
              ))}
            </Stack>
          </ScrollArea.Autosize>
        </Stack>
      )}
    </Drawer>
  );
}
