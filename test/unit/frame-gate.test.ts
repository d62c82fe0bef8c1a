/**
 * The frame gate (engine/commit-before-receipt.ts) over a recording socket: frames wait for `whenDurable`, holds keep
 * them (and the key writes, `onRelease`), and a discarded gate sends nothing and holds the key writes for good.
 */
import type { WASocket } from '@whiskeysockets/baileys';
import { describe, expect, it } from 'vitest';
import { sendFramesAfterCommit } from '../../service/engine/commit-before-receipt.ts';

function recordingSocket() {
  const sent: unknown[] = [];
  const socket = { send: (data: unknown, cb?: (err?: Error) => void) => void (sent.push(data), cb?.()) };
  return { sock: { ws: { socket } } as unknown as WASocket, raw: socket, sent };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('the frame gate', () => {
  it('sends frames once durable, keeps them while held, and tells the key store when the last hold ends', async () => {
    const { sock, raw, sent } = recordingSocket();
    let released = 0;
    const gate = sendFramesAfterCommit(sock, (send) => send(), { onRelease: () => void released++ });
    const release = gate.hold();
    raw.send('receipt');
    await turn();
    expect(sent).toEqual([]);
    expect(gate.holding()).toBe(true);
    release();
    expect(sent).toEqual(['receipt']);
    expect(released).toBe(1);
    expect(gate.holding()).toBe(false);
  });

  it('once discarded sends nothing, and holds the key writes for good: a release no longer lets them go', async () => {
    const { sock, raw, sent } = recordingSocket();
    let released = 0;
    const gate = sendFramesAfterCommit(sock, (send) => send(), { onRelease: () => void released++ });
    const release = gate.hold();
    raw.send('receipt of a message not stored');
    expect(gate.discard()).toBe(1);
    release();
    let error: Error | undefined;
    raw.send('later frame', (err) => (error = err));
    await turn();
    expect(sent).toEqual([]);
    expect(released).toBe(0);
    expect(gate.holding()).toBe(true);
    expect(error?.message).toMatch(/connection closing/);
  });
});
