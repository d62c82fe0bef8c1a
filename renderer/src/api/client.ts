/**
 * The console's one API client: every REST call of the local API (README "The API", interface-spec §4) as a
 * typed method, the Bearer header, the error shape, and authenticated media downloads (blob URLs).
 */
import type {
  ApiErrorBody,
  Contact,
  ContactProfile,
  NumberCheck,
  EventsPage,
  ApiToken,
  BillingStatus,
  Chat,
  Connection,
  CreatedToken,
  EventFrame,
  GroupInfo,
  Health,
  MachineSettingsPatch,
  MachineSettingsSaved,
  MachineSettingsView,
  Message,
  MessagePage,
  PairingCode,
  Profile,
  SearchPage,
  SlotChange,
  Webhook,
  WebhookDelivery,
} from './types.ts';

/** An HTTP error of the API, with its status and message (`{ message, statusCode, error }`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
  /** The route does not exist (yet) on this service. */
  get notAvailable(): boolean {
    return this.status === 404 && /^Route .* not found$/.test(this.message);
  }
}

export type SendKind = 'image' | 'document' | 'video' | 'audio';

export interface ApiClientOptions {
  /** e.g. `http://127.0.0.1:7575/api` */
  baseUrl: string;
  token: string;
  fetch?: typeof fetch;
  /** Called when the API answers 401 (the token was revoked or expired): the console goes back to sign-in. */
  onUnauthorized?: () => void;
}

const enc = encodeURIComponent;

export class ApiClient {
  readonly baseUrl: string;
  readonly token: string;
  private readonly fetchImpl: typeof fetch;
  /** Set by the session once signed in (see ApiClientOptions.onUnauthorized). */
  onUnauthorized: (() => void) | undefined;

  constructor(opts: ApiClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/$/, '');
    this.token = opts.token;
    this.fetchImpl = opts.fetch ?? ((...args) => globalThis.fetch(...args));
    this.onUnauthorized = opts.onUnauthorized;
  }

  /** WebSocket URL of the event stream, resuming after `after` when given. */
  wsUrl(after?: number): string {
    const u = new URL(`${this.baseUrl}/ws`, globalThis.location?.href);
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
    u.searchParams.set('token', this.token);
    if (after !== undefined) u.searchParams.set('after', String(after));
    return u.toString();
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new ApiError(0, `The service is unreachable (${(err as Error).message})`);
    }
    const text = await res.text();
    let data: unknown = undefined;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = text;
      }
    }
    if (!res.ok) {
      if (res.status === 401) this.onUnauthorized?.();
      const b = data as Partial<ApiErrorBody> | undefined;
      const retry = Number(res.headers.get('retry-after'));
      throw new ApiError(res.status, b?.message ?? `${res.status} ${res.statusText}`, Number.isFinite(retry) && retry > 0 ? retry : undefined);
    }
    return data as T;
  }

  // Health (no auth needed, the header does no harm)
  health = () => this.request<Health>('GET', '/');

  // Connections
  /** The caller's connections; `includeDeleted` adds the deleted ones (status `stopped`, `?include=deleted`). */
  listConnections = (opts: { includeDeleted?: boolean } = {}) =>
    this.request<Connection[]>('GET', opts.includeDeleted ? '/connections?include=deleted' : '/connections');
  getConnection = (id: string) => this.request<Connection>('GET', `/connections/${enc(id)}`);
  createConnection = (name?: string) => this.request<Connection>('POST', '/connections', name ? { name } : {});
  getOrCreateConnection = (name?: string) =>
    this.request<Connection>('POST', '/connections/get-or-create', name ? { name } : {});
  renameConnection = (id: string, name: string | null) => this.request<Connection>('PATCH', `/connections/${enc(id)}`, { name });
  restartConnection = (id: string) => this.request<Connection>('POST', `/connections/${enc(id)}/restart`);
  deleteConnection = (id: string) => this.request<{ success: true }>('DELETE', `/connections/${enc(id)}`);
  qr = (id: string) => this.request<{ value: string }>('GET', `/connections/${enc(id)}/qr`);
  /** A code to type on the phone of `phoneNumber` instead of scanning the QR (status `scan_qr` only). */
  pairingCode = (id: string, phoneNumber: string) =>
    this.request<PairingCode>('POST', `/connections/${enc(id)}/pairing-code`, { phoneNumber });
  me = (id: string, refresh = false) => this.request<Profile>('GET', `/connections/${enc(id)}/me${refresh ? '?refresh=true' : ''}`);
  /** Changes the account's push name and/or about text. */
  updateMe = (id: string, body: { pushName?: string; about?: string }) => this.request<Profile>('PATCH', `/connections/${enc(id)}/me`, body);
  /** Sets the account's profile picture (JPEG or PNG, base64 or a data: URL). */
  setMyPicture = (id: string, base64: string) => this.request<Profile>('PUT', `/connections/${enc(id)}/me/picture`, { base64 });

  // Chats and messages
  chats = (id: string, opts: { limit?: number; offset?: number; unreadOnly?: boolean; q?: string } = {}) => {
    const q = new URLSearchParams();
    if (opts.q?.trim()) q.set('q', opts.q.trim());
    if (opts.limit) q.set('limit', String(opts.limit));
    if (opts.offset) q.set('offset', String(opts.offset));
    if (opts.unreadOnly) q.set('unread_only', 'true');
    const qs = q.toString();
    return this.request<Chat[]>('GET', `/connections/${enc(id)}/chats${qs ? `?${qs}` : ''}`);
  };
  messages = (id: string, chatId: string, opts: { limit?: number; before?: string | null } = {}) => {
    const q = new URLSearchParams();
    if (opts.limit) q.set('limit', String(opts.limit));
    if (opts.before) q.set('before', opts.before);
    const qs = q.toString();
    return this.request<MessagePage>('GET', `/connections/${enc(id)}/chats/${enc(chatId)}/messages${qs ? `?${qs}` : ''}`);
  };
  /** The page centred on a message (`around`) or the newer messages after a `nextAfter` cursor (`after`). */
  messagesAt = (id: string, chatId: string, opts: { limit?: number; around?: string; after?: string }) => {
    const q = new URLSearchParams();
    if (opts.limit) q.set('limit', String(opts.limit));
    if (opts.around) q.set('around', opts.around);
    if (opts.after) q.set('after', opts.after);
    return this.request<MessagePage>('GET', `/connections/${enc(id)}/chats/${enc(chatId)}/messages?${q}`);
  };
  /** Full-text search in one connection, or across all of yours when `connectionId` is null. */
  search = (q: string, opts: { connectionId?: string | null; limit?: number; before?: string | null } = {}) => {
    const params = new URLSearchParams({ q });
    if (opts.limit) params.set('limit', String(opts.limit));
    if (opts.before) params.set('before', opts.before);
    return this.request<SearchPage>('GET', `${opts.connectionId ? `/connections/${enc(opts.connectionId)}/search` : '/search'}?${params}`);
  };
  /** Downloads a chat export (JSONL, HTML, or a ZIP with media) with the Authorization header: a blob and its file name. */
  async exportChat(id: string, chatId: string, format: 'jsonl' | 'html', media: boolean): Promise<{ blob: Blob; filename: string }> {
    const url = `${this.baseUrl}/connections/${enc(id)}/chats/${enc(chatId)}/export?format=${format}&media=${media}`;
    const res = await this.fetchImpl(url, { headers: { authorization: `Bearer ${this.token}` } });
    if (!res.ok) throw new ApiError(res.status, `Export failed (${res.status})`);
    const filename = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? `chat.${media ? 'zip' : format}`;
    return { blob: await res.blob(), filename };
  }
  message = (id: string, messageId: string, chatId: string) =>
    this.request<Message>('GET', `/connections/${enc(id)}/messages/${enc(messageId)}?chatId=${enc(chatId)}`);

  // Sending
  sendText = (id: string, body: { chatId: string; text: string; replyTo?: string; skipPresence?: boolean; mentions?: string[] }) =>
    this.request<Message>('POST', `/connections/${enc(id)}/send`, body);
  /** Body: `{ chatId, url | base64, mimetype?, filename?, caption?, replyTo?, skipPresence? }` (+ `ptt` for audio). */
  sendMedia = (id: string, kind: SendKind, body: { chatId: string; base64?: string; url?: string; mimetype?: string; filename?: string; caption?: string; replyTo?: string; skipPresence?: boolean; mentions?: string[] }) =>
    this.request<Message>('POST', `/connections/${enc(id)}/send-${kind}`, body);
  sendLocation = (id: string, body: { chatId: string; latitude: number; longitude: number; name?: string; address?: string; skipPresence?: boolean }) =>
    this.request<Message>('POST', `/connections/${enc(id)}/send-location`, body);
  /** A group with its members (admin roles) — the thread's group info panel and the composer's @ mentions. */
  group = (id: string, groupId: string) => this.request<GroupInfo>('GET', `/connections/${enc(id)}/groups/${enc(groupId)}`);
  contacts = (id: string, limit = 500) => this.request<Contact[]>('GET', `/connections/${enc(id)}/contacts?limit=${limit}`);
  /** A contact's name, about text and picture (`refresh`: ask WhatsApp instead of the 24 h cache). */
  contactProfile = (id: string, jid: string, refresh = false) =>
    this.request<ContactProfile>('GET', `/connections/${enc(id)}/contacts/${enc(jid)}/profile${refresh ? '?refresh=true' : ''}`);
  blocklist = (id: string) => this.request<string[]>('GET', `/connections/${enc(id)}/blocklist`);
  setBlocked = (id: string, jid: string, blocked: boolean) =>
    this.request<{ jid: string; blocked: boolean }>('POST', `/connections/${enc(id)}/contacts/${enc(jid)}/${blocked ? 'block' : 'unblock'}`);
  /** Rejects an incoming call that is still ringing (`callId` of its `call.received` event). */
  rejectCall = (id: string, callId: string) => this.request<unknown>('POST', `/connections/${enc(id)}/calls/${enc(callId)}/reject`);
  checkNumbers = (id: string, phoneNumbers: string[]) =>
    this.request<NumberCheck[]>('POST', `/connections/${enc(id)}/contacts/check`, { phoneNumbers });
  sendContact = (id: string, body: { chatId: string; name: string; phoneNumber: string; skipPresence?: boolean }) =>
    this.request<Message>('POST', `/connections/${enc(id)}/send-contact`, body);
  react = (id: string, body: { chatId: string; messageId: string; emoji: string }) =>
    this.request<Message>('POST', `/connections/${enc(id)}/react`, body);
  editMessage = (id: string, messageId: string, body: { chatId: string; text: string }) =>
    this.request<Message>('PUT', `/connections/${enc(id)}/messages/${enc(messageId)}`, body);
  /** Delete for everyone: the Message comes back with `kind: "revoked"` (its `type` is `text`). */
  revokeMessage = (id: string, messageId: string, chatId: string) =>
    this.request<Message>('DELETE', `/connections/${enc(id)}/messages/${enc(messageId)}?chatId=${enc(chatId)}`);
  forward = (id: string, body: { chatId: string; messageId: string; fromChatId: string }) =>
    this.request<Message>('POST', `/connections/${enc(id)}/forward`, body);
  markRead = (id: string, chatId: string) => this.request<unknown>('POST', `/connections/${enc(id)}/mark-read`, { chatId });
  typing = (id: string, chatId: string) => this.request<unknown>('POST', `/connections/${enc(id)}/typing`, { chatId });
  typingStop = (id: string, chatId: string) => this.request<unknown>('POST', `/connections/${enc(id)}/typing/stop`, { chatId });

  // Webhooks
  webhooks = (cid: string) => this.request<Webhook[]>('GET', `/connections/${enc(cid)}/webhooks`);
  createWebhook = (cid: string, body: { url: string; events: string[] }) =>
    this.request<Webhook>('POST', `/connections/${enc(cid)}/webhooks`, body);
  updateWebhook = (id: string, body: { url?: string; events?: string[]; active?: boolean }) =>
    this.request<Webhook>('PUT', `/webhooks/${enc(id)}`, body);
  deleteWebhook = (id: string) => this.request<{ success: true }>('DELETE', `/webhooks/${enc(id)}`);
  webhookLogs = (id: string) => this.request<WebhookDelivery[]>('GET', `/webhooks/${enc(id)}/logs`);
  testWebhook = (id: string) => this.request<unknown>('POST', `/webhooks/${enc(id)}/test`);
  retryDelivery = (id: string, deliveryId: string) =>
    this.request<unknown>('POST', `/webhooks/${enc(id)}/deliveries/${enc(deliveryId)}/retry`);

  // Tokens
  tokens = () => this.request<ApiToken[]>('GET', '/tokens');
  createToken = (name: string) => this.request<CreatedToken>('POST', '/tokens', { name });
  revokeToken = (id: string) => this.request<unknown>('DELETE', `/tokens/${enc(id)}`);

  // Billing
  billingStatus = () => this.request<BillingStatus>('GET', '/billing/status');
  canCreate = () => this.request<{ allowed?: boolean; canCreate?: boolean; reason?: string }>('GET', '/billing/can-create');
  setSlots = (quantity: number) => this.request<SlotChange>('PUT', '/billing/slots', { quantity });
  checkout = () => this.request<{ url: string }>('POST', '/billing/checkout');
  portal = () => this.request<{ url: string }>('POST', '/billing/portal');

  // Machine settings (the machine's owner only; docs/settings.md)
  settings = () => this.request<MachineSettingsView>('GET', '/settings');
  updateSettings = (patch: MachineSettingsPatch) => this.request<MachineSettingsSaved>('PATCH', '/settings', patch);
  restartService = () => this.request<{ restarting: true }>('POST', '/settings/restart');

  // Event log
  events = (after?: number, limit = 100) =>
    this.request<EventsPage>('GET', `/events?limit=${limit}${after !== undefined ? `&after=${after}` : ''}`).then((r) =>
      r.events.map((e) => ({ ...e, connectionId: e.connectionId ?? '' })),
    );
  /** The newest `count` events of the caller's log (oldest first): what the Events view shows after a reload. */
  recentEvents = async (count = 200): Promise<EventFrame[]> => {
    const { lastSeq, oldestSeq } = await this.request<EventsPage>('GET', '/events?limit=1');
    const after = Math.max(0, lastSeq - count, (oldestSeq ?? 1) - 1);
    return lastSeq === 0 ? [] : this.events(after, Math.min(1000, Math.max(1, lastSeq - after)));
  };

  /**
   * Downloads media through the proxy with the Authorization header and returns a blob: URL (revoke it when done).
   * `url` is a Message's `media.url` (see resolveMediaUrl).
   */
  async mediaBlobUrl(url: string): Promise<string> {
    const abs = this.resolveMediaUrl(url);
    const res = await this.fetchImpl(abs, { headers: { authorization: `Bearer ${this.token}` } });
    if (!res.ok) throw new ApiError(res.status, res.status === 404 ? 'Media is no longer available' : `Media failed (${res.status})`);
    return URL.createObjectURL(await res.blob());
  }

  /**
   * Where to fetch a Message's `media.url`: as given when it is absolute on this client's API origin (the service
   * builds it from its public base URL), else the same file through this client's own API base — a `--public-url`
   * (a proxy, a LAN name) may not be reachable from, or readable cross-origin by, this page. Relative URLs (older
   * services) resolve against the API base or its origin.
   */
  resolveMediaUrl(url: string): string {
    if (/^https?:/i.test(url)) {
      const api = new URL(`${this.baseUrl}/`, globalThis.location?.href);
      const media = new URL(url);
      if (media.origin === api.origin) return url;
      const tail = /\/connections\/[^/]+\/media\/[^/]+$/.exec(media.pathname)?.[0];
      return tail ? `${this.baseUrl}${tail}` : url;
    }
    if (url.startsWith('/api/')) return new URL(url, this.baseUrl).toString();
    if (url.startsWith('/')) return `${this.baseUrl}${url}`;
    return `${this.baseUrl}/${url}`;
  }
}

/** A short human message for any error thrown by the client. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.notAvailable) return 'This feature is not available on this service version yet.';
    return err.message;
  }
  return err instanceof Error ? err.message : String(err);
}
