/** Which view the console shows, mirrored in the URL hash (`#/chats`) so reloads and links keep it. */
import { create } from 'zustand';

export const VIEWS = ['connections', 'chats', 'webhooks', 'tokens', 'billing', 'events', 'settings'] as const;
export type View = (typeof VIEWS)[number];

function fromHash(): View {
  const h = typeof location === 'undefined' ? '' : location.hash.replace(/^#\/?/, '');
  return (VIEWS as readonly string[]).includes(h) ? (h as View) : 'connections';
}

interface NavState {
  view: View;
  go(view: View): void;
}

export const useNav = create<NavState>((set) => ({
  view: fromHash(),
  go(view) {
    if (typeof history !== 'undefined') history.replaceState(null, '', `#/${view}`);
    set({ view });
  },
}));
