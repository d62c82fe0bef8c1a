/**
 * One client (Baileys) WebSocket connection: Noise handshake → registration (pairing) or login →
 * stanza dispatch (brief §B1–§B4).
 *
 * Owns: per-connection transport state, in-order decoding of frames, sending nodes, server-initiated
 * IQs awaiting the client's reply, the login sequence (`<success lid>`, `<ib><offline/>`, offline queue
 * flush), and routing of stanzas to the IQ handlers, messaging and delivery. Every failure is confined
 * to this connection: a malformed frame closes it, a failing stanza handler is logged and skipped.
 */
import type { WebSocket } from 'ws';
import type { Logger } from 'pino';
import { decodeBinaryNode, encodeBinaryNode, type BinaryNode } from '@whiskeysockets/baileys';
import { FrameReader, NoiseProtocolError, NoiseResponder, encodeFrame, type HandshakeResult } from './noise.ts';
import { unixNow, type SandboxContext } from './context.ts';
import { handleIq } from './iq-handlers.ts';
import { lidJid } from './phone-number.ts';
import { onMediaRetryReceipt } from './media.ts';

/** hello → finish (Noise) → transport (registered or pairing, not logged in) → online (logged in) → closed */
type ConnState = 'hello' | 'finish' | 'transport' | 'online' | 'closed';

interface PendingIq {
  resolve: (node: BinaryNode) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

let nextConnectionId = 1;

export class ClientConnection {
  readonly id = nextConnectionId++;
  readonly log: Logger;
  private state: ConnState = 'hello';
  private readonly reader = new FrameReader();
  private readonly noise: NoiseResponder;
  private chain: Promise<void> = Promise.resolve();
  private readonly pendingIqs = new Map<string, PendingIq>();
  private iqCounter = 0;
  /** Client Noise static key (seen in ClientFinish). */
  clientStaticKey: Buffer | undefined;
  /** Bound account and companion device id after a successful login. */
  pn: string | undefined;
  deviceId: number | undefined;

  constructor(
    private readonly ctx: SandboxContext,
    private readonly ws: WebSocket,
  ) {
    this.log = ctx.logger.child({ conn: this.id });
    this.noise = new NoiseResponder(ctx.identity);
    ws.on('message', (data, isBinary) => this.onData(data, isBinary));
    ws.on('close', () => this.onClosed());
    ws.on('error', (err) => this.log.debug({ err }, 'websocket error'));
  }

  get isOpen(): boolean {
    return this.state !== 'closed';
  }

  get isOnline(): boolean {
    return this.state === 'online';
  }

  private onData(data: unknown, isBinary: boolean): void {
    if (this.state === 'closed') return;
    try {
      if (!isBinary || !Buffer.isBuffer(data)) throw new NoiseProtocolError('non-binary websocket message');
      for (const frame of this.reader.push(data)) this.onFrame(frame);
    } catch (err) {
      this.log.warn({ err }, 'closing connection after protocol error');
      this.close();
    }
  }

  private onFrame(frame: Buffer): void {
    switch (this.state) {
      case 'hello':
        this.ws.send(encodeFrame(this.noise.processClientHello(frame)));
        this.state = 'finish';
        return;
      case 'finish': {
        const result = this.noise.processClientFinish(frame);
        this.clientStaticKey = result.clientStaticKey;
        this.state = 'transport';
        this.enqueue(() => this.onHandshake(result));
        return;
      }
      case 'transport':
      case 'online': {
        const plaintext = this.noise.decrypt(frame); // in arrival order: the counter is implicit
        this.enqueue(async () => {
          let node: BinaryNode;
          try {
            node = await decodeBinaryNode(plaintext);
          } catch (err) {
            this.log.warn({ err }, 'undecodable node; closing');
            this.close();
            return;
          }
          await this.onNode(node);
        });
        return;
      }
      case 'closed':
        return;
    }
  }

  /** Run stanza handlers strictly in arrival order; a failure is logged, never fatal to the process. */
  private enqueue(task: () => Promise<void>): void {
    this.chain = this.chain.then(task).catch((err: unknown) => {
      // once the connection is gone (or the sandbox shuts down) a failing handler is expected
      if (this.state === 'closed') this.log.debug({ err }, 'stanza handler stopped');
      else this.log.error({ err }, 'stanza handler failed');
    });
  }

  private async onHandshake({ payload }: HandshakeResult): Promise<void> {
    if (payload.devicePairingData && payload.username == null) {
      this.log.debug('registration payload: starting pairing');
      this.ctx.pairing.begin(this, payload);
      return;
    }
    if (payload.username == null) {
      this.log.warn('client payload without username or pairing data');
      this.fail('400');
      return;
    }
    this.login(String(payload.username), payload.device ?? 0);
  }

  /** Login of a registered companion (brief §B2 "Registered client", §B4). */
  private login(pn: string, deviceId: number): void {
    const { store, accounts, delivery } = this.ctx;
    const account = accounts.get(pn);
    const device = account && store.getDevice(pn, deviceId);
    if (!account || !device || !this.clientStaticKey || !device.noisePub.equals(this.clientStaticKey)) {
      this.log.info({ pn, deviceId, known: !!device }, 'login refused: unknown device or noise key mismatch');
      this.fail('401');
      return;
    }
    this.pn = pn;
    this.deviceId = deviceId;
    this.state = 'online';
    store.touchDevice(pn, deviceId);
    delivery.attach(this);
    this.send({
      tag: 'success',
      attrs: { t: unixNow(), lid: lidJid(account.lid, deviceId), location: 'sandbox', props: '1' },
    });
    this.log.info({ pn, deviceId }, 'companion logged in');
    // not awaited: the queue flush runs alongside the client's login IQs (count, passive, digest)
    delivery.onLogin(this, device).catch((err: unknown) => this.log.error({ err }, 'login delivery failed'));
  }

  private async onNode(node: BinaryNode): Promise<void> {
    if (this.log.isLevelEnabled('trace')) this.log.trace({ tag: node.tag, attrs: node.attrs }, 'recv node');
    const { tag, attrs } = node;
    if (tag === 'iq' && (attrs.type === 'result' || attrs.type === 'error')) {
      const pending = attrs.id ? this.pendingIqs.get(attrs.id) : undefined;
      if (pending) {
        this.pendingIqs.delete(attrs.id!);
        clearTimeout(pending.timer);
        pending.resolve(node);
      }
      return;
    }
    if (tag === 'iq') {
      await handleIq(this.ctx, this, node);
      return;
    }
    if (this.state !== 'online') {
      this.log.debug({ tag }, 'ignoring stanza before login');
      return;
    }
    switch (tag) {
      case 'message':
        await this.ctx.messaging.onClientMessage(this, node);
        return;
      case 'receipt':
        if (attrs.type === 'server-error') {
          await onMediaRetryReceipt(this.ctx, this, node);
          return;
        }
        await this.ctx.delivery.onReceipt(this, node);
        await this.ctx.signals.onClientReceipt(this, node);
        return;
      case 'chatstate':
        await this.ctx.signals.onClientChatstate(this, node);
        return;
      case 'presence':
        await this.ctx.signals.onClientPresence(this, node);
        return;
      case 'ack':
        await this.ctx.delivery.onAck(this, node);
        return;
      case 'call':
        this.ctx.calls.onClientCall(this, node);
        return;
      default:
        // ib (unified_session, offline_batch), call, … — never fatal
        this.log.debug({ tag, attrs }, 'unhandled stanza');
    }
  }

  /** Encrypt and send one node. A no-op once the connection is closed. */
  send(node: BinaryNode): void {
    if (this.state === 'closed' || this.ws.readyState !== this.ws.OPEN) return;
    if (this.log.isLevelEnabled('trace')) this.log.trace({ tag: node.tag, attrs: node.attrs }, 'send node');
    this.ws.send(encodeFrame(this.noise.encrypt(encodeBinaryNode(node))));
  }

  /** Reply to a client IQ: `<iq type="result" id from="@s.whatsapp.net">content</iq>`. */
  reply(iq: BinaryNode, content?: BinaryNode[]): void {
    const node: BinaryNode = { tag: 'iq', attrs: { id: iq.attrs.id ?? '', type: 'result', from: '@s.whatsapp.net' } };
    if (content) node.content = content;
    this.send(node);
  }

  /** Reply to a client IQ with `<error code text/>` (the client throws Boom(text)). */
  replyError(iq: BinaryNode, code: string, text: string): void {
    this.send({
      tag: 'iq',
      attrs: { id: iq.attrs.id ?? '', type: 'error', from: '@s.whatsapp.net' },
      content: [{ tag: 'error', attrs: { code, text } }],
    });
  }

  /**
   * Send a server-initiated IQ and wait for the client's `result`/`error` with the same id.
   * @throws Error on timeout (`timeoutMs`) or when the connection closes first.
   */
  query(node: BinaryNode, timeoutMs: number): Promise<BinaryNode> {
    const id = node.attrs.id ?? `sb-${this.id}-${++this.iqCounter}`;
    node.attrs.id = id;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pendingIqs.delete(id);
        reject(new Error(`timed out waiting for the client's reply to iq ${id}`));
      }, timeoutMs);
      this.pendingIqs.set(id, { resolve, reject, timer });
      this.send(node);
    });
  }

  /** Send `<stream:error code=…/>` (e.g. 515 restart) and close. */
  streamError(code: string): void {
    this.send({ tag: 'stream:error', attrs: { code } });
    this.close();
  }

  /** Send `<stream:error><conflict type="replaced"/></stream:error>` (client closes with 440) and close. */
  replaced(): void {
    this.send({ tag: 'stream:error', attrs: {}, content: [{ tag: 'conflict', attrs: { type: 'replaced' } }] });
    this.close();
  }

  /** Send `<failure reason=…/>` (401 = logged out) and close. */
  fail(reason: string): void {
    this.send({ tag: 'failure', attrs: { reason, location: 'sandbox' } });
    this.close();
  }

  /** Close the WebSocket (after already-queued frames are flushed). */
  close(): void {
    if (this.state === 'closed') return;
    try {
      this.ws.close();
    } catch {
      this.ws.terminate();
    }
    this.onClosed();
  }

  private onClosed(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    for (const [id, p] of this.pendingIqs) {
      clearTimeout(p.timer);
      p.reject(new Error(`connection closed before the reply to iq ${id}`));
    }
    this.pendingIqs.clear();
    this.ctx.pairing.end(this);
    this.ctx.linkCodes.end(this);
    this.ctx.delivery.detach(this);
    this.log.debug('connection closed');
  }

  /** Forcefully drop the socket (sandbox shutdown). */
  terminate(): void {
    this.onClosed();
    this.ws.terminate();
  }
}
