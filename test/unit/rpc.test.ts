/**
 * Typed calls across postMessage (engine/rpc.ts), over a real MessageChannel: answers and errors (with their status
 * code) come back to the caller, a call past its deadline rejects with the client's timeout error and its late answer
 * is dropped, a request that arrives after its deadline is not run, and `failAll` rejects what is in flight.
 */
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { ServiceError } from '../../service/errors.ts';
import { RpcClient, serveRpc, type RpcHandlers, type RpcReply, type RpcRequest } from '../../service/engine/rpc.ts';

interface Calc {
  add(a: number, b: number): number;
  slow(ms: number): Promise<string>;
  fail(statusCode: number): Promise<void>;
}

describe('typed RPC', () => {
  const channels: MessageChannel[] = [];
  afterEach(() => {
    for (const c of channels.splice(0)) {
      c.port1.close();
      c.port2.close();
    }
  });

  /** A client on port1 and a server of `handlers` on port2. */
  function connect(handlers: RpcHandlers<Calc>, timeoutMs = 1_000) {
    const channel = new MessageChannel();
    channels.push(channel);
    channel.port2.on('message', (request: RpcRequest<Calc>) => {
      void serveRpc(handlers, request).then((reply) => channel.port2.postMessage(reply));
    });
    const client = new RpcClient<Calc>({
      post: (request) => channel.port1.postMessage(request),
      defaultTimeoutMs: timeoutMs,
      timeoutError: (method, ms) => new Error(`${method} timed out after ${ms} ms`),
      errorOf: (e) => (e.statusCode ? new ServiceError(e.statusCode, e.message) : new Error(e.message)),
    });
    channel.port1.on('message', (reply: RpcReply) => client.settle(reply));
    return { client };
  }

  const handlers: RpcHandlers<Calc> = {
    add: (a, b) => a + b,
    slow: (ms) => new Promise((resolve) => setTimeout(() => resolve(`after ${ms}`), ms)),
    fail: async (statusCode) => {
      throw new ServiceError(statusCode, 'refused');
    },
  };

  it('answers a call, and brings its error back with the status code', async () => {
    const { client } = connect(handlers);
    expect(await client.call('add', [2, 3])).toBe(5);
    const err = await client.call('fail', [409]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ statusCode: 409, message: 'refused' });
  });

  it('rejects a call past its deadline with the timeout error; the late answer is dropped', async () => {
    const { client } = connect(handlers);
    await expect(client.call('slow', [300], 50)).rejects.toThrow('slow timed out after 50 ms');
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(await client.call('slow', [1])).toBe('after 1');
  });

  it('does not run a request that arrives after its deadline', async () => {
    const reply = await serveRpc(handlers, { id: 1, method: 'add', params: [1, 1], deadline: Date.now() - 1 });
    expect(reply).toMatchObject({ id: 1, ok: false, error: { message: 'call add arrived after its deadline' } });
  });

  it('failAll rejects every call in flight', async () => {
    const { client } = connect(handlers, 5_000);
    const pending = client.call('slow', [200]);
    client.failAll((method) => new Error(`${method}: the other side stopped`));
    await expect(pending).rejects.toThrow('slow: the other side stopped');
  });
});
