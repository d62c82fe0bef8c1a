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

/**
 * Views are hash routes: `go` adds a history entry (Back returns to the previous view), and a link or a typed
 * `#/billing` switches the view, since the store follows `hashchange`.
 */
export const useNav = create<NavState>((set) => ({
  view: fromHash(),
  go(view) {
    if (typeof location !== 'undefined' && location.hash !== `#/${view}`) location.hash = `#/${view}`;
    set({ view });
  },
}));

if (typeof window !== 'undefined') window.addEventListener('hashchange', () => useNav.setState({ view: fromHash() }));
