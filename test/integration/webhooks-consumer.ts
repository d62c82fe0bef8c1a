/**
 * A programmable webhook consumer on 127.0.0.1 for tests and benchmarks: records every request, verifies its
 * Standard Webhooks signature with the `standardwebhooks` package (secret registered per path), and answers as
 * the path's behaviour says (status, headers, delay, body). Unknown paths answer 204.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  path: string;
  id: string;
  timestamp: number;
  signature: string;
  body: string;
  /** Parsed body, or undefined when the signature did not verify. */
  verified: { event: string; session: string; payload: Record<string, unknown> } | undefined;
  error?: string;
  at: number;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
}

export interface Consumer {
  url(path: string): string;
  port: number;
  received: Received[];
  /** Registers the signing secret used to verify requests to `path`. */
  secret(path: string, secret: string): void;
  /** How to answer requests to `path`; `n` = 1-based count of requests to that path so far. */
  behave(path: string, fn: (n: number, r: Received) => Reply): void;
  on(path: string): Received[];
  close(): Promise<void>;
}

export async function startConsumer(opts: { record?: boolean; onReceive?: (r: Received) => void } = {}): Promise<Consumer> {
  const secrets = new Map<string, Webhook>();
  const behaviours = new Map<string, (n: number, r: Received) => Reply>();
  const counts = new Map<string, number>();
  const received: Received[] = [];
  const record = opts.record ?? true;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0]!;
      const h = req.headers as Record<string, string>;
      const r: Received = {
        path,
        id: h['webhook-id'] ?? '',
        timestamp: Number(h['webhook-timestamp']),
        signature: h['webhook-signature'] ?? '',
        body,
        verified: undefined,
        at: performance.now(),
      };
      const wh = secrets.get(path);
      try {
        if (wh) r.verified = wh.verify(body, h) as Received['verified'];
        else r.error = 'no secret registered';
      } catch (err) {
        r.error = String(err);
      }
      if (record) received.push(r);
      opts.onReceive?.(r);
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      const reply = behaviours.get(path)?.(n, r) ?? {};
      const send = () => {
        res.writeHead(reply.status ?? 204, reply.headers);
        res.end(reply.body);
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path) => `http://127.0.0.1:${port}${path}`,
    received,
    secret: (path, secret) => secrets.set(path, new Webhook(secret)),
    behave: (path, fn) => behaviours.set(path, fn),
    on: (path) => received.filter((r) => r.path === path),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
