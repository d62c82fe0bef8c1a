/** The live event monitor's memory: the last frames seen on the stream (newest last) and the socket's state. */
import { create } from 'zustand';
import type { SocketState } from '../api/event-socket.ts';
import type { EventFrame } from '../api/types.ts';

export const MAX_FRAMES = 500;

interface EventsState {
  frames: EventFrame[];
  socket: SocketState;
  paused: boolean;
  add(frames: EventFrame[]): void;
  clear(): void;
  setSocket(s: SocketState): void;
  setPaused(p: boolean): void;
}

export const useEvents = create<EventsState>((set) => ({
  frames: [],
  socket: 'closed',
  paused: false,
  add(frames) {
    set((s) => {
      const seen = new Set(s.frames.map((f) => f.seq));
      const next = [...s.frames, ...frames.filter((f) => !seen.has(f.seq))].sort((a, b) => a.seq - b.seq);
      return { frames: next.length > MAX_FRAMES ? next.slice(-MAX_FRAMES) : next };
    });
  },
  clear() {
    set({ frames: [] });
  },
  setSocket(socket) {
    set({ socket });
  },
  setPaused(paused) {
    set({ paused });
  },
}));
