/**
 * Shapes of the local API as the console uses them (README "The API", interface-spec §2). Records owned by
 * routes that may not exist yet (webhooks, tokens, billing) are typed loosely: every field the console reads
 * is optional where the spec leaves it open.
 */
export interface Health {
  status: 'ok';
  version: string;
  uptime: number;
  connections: number;
  sandbox: boolean;
}

export type ConnectionStatus =
  | 'starting'
  | 'scan_qr'
  | 'connected'
  | 'online'
  | 'reconnecting'
  | 'logged_out'
  | 'failed'
  | 'stopped';

export interface Connection {
  id: string;
  userId: string;
  workerId: string;
  sessionName: string;
  phoneNumber: string | null;
  status: ConnectionStatus;
  engine: string;
  name: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface Profile {
  id: string;
  pushName: string;
}

export interface Chat {
  id: string;
  name: string;
  isGroup: boolean;
  lastMessage: { body: string; timestamp: number; fromMe: boolean } | null;
  unread: number;
}

export interface MediaInfo {
  url: string;
  mimetype: string;
  filename?: string | null;
  size?: number | null;
}

export type MessageType = 'text' | 'image' | 'video' | 'audio' | 'document' | 'location' | 'contact' | string;

export interface Message {
  id: string;
  chatId: string;
  timestamp: number;
  fromMe: boolean;
  senderJid: string;
  senderPushName: string;
  type: MessageType;
  text: string;
  quotedMessageId: string | null;
  media: MediaInfo | null;
  ack: number | null;
  /** Current reactions, one per sender. */
  reactions?: Array<{ senderJid: string; emoji: string; timestamp: number }>;
  /** Unix seconds of the last edit, or null. */
  editedAt?: number | null;
  /** Edited while this console watched (before a reload shows editedAt). */
  edited?: boolean;
}

export interface MessagePage {
  messages: Message[];
  nextBefore: string | null;
  historyStartsAt: number | null;
}

export interface EventFrame {
  event: string;
  connectionId: string;
  payload: Record<string, unknown>;
  timestamp: string;
  seq: number;
}

export interface Webhook {
  id: string;
  sessionId: string;
  url: string;
  events: string[];
  signingSecret: string;
  active: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface WebhookDelivery {
  id: string;
  eventType: string;
  payload: unknown;
  status: string;
  attempts: number;
  deliveredAt: string | null;
  createdAt: string;
  lastError?: string | null;
  lastStatusCode?: number | null;
  nextAttemptAt?: string | null;
}

export interface ApiToken {
  id: string;
  name?: string | null;
  prefix?: string;
  createdAt?: string;
  lastUsedAt?: string | null;
}

/** POST /tokens: the token record plus the secret value, shown once. */
export interface CreatedToken extends ApiToken {
  token?: string;
  value?: string;
}

export interface BillingStatus {
  slots?: number;
  used?: number;
  usedSlots?: number;
  available?: number;
  availableSlots?: number;
  provider?: string;
  status?: string;
  subscriptionStatus?: string;
  currency?: string;
  [key: string]: unknown;
}

export interface SlotChange {
  slots: number;
  status: 'upgraded' | 'downgraded' | 'unchanged';
  proratedAmount: number;
  currency: string;
}

export interface ApiErrorBody {
  message: string;
  statusCode: number;
  error?: string;
}

/** Event types the service emits (DESIGN.md §4). */
export const EVENT_TYPES = [
  'session.status',
  'message',
  'message.sent',
  'message.ack',
  'message.reaction',
  'message.edited',
  'presence.update',
  'webhook.test',
] as const;
