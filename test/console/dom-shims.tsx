/**
 * Browser APIs jsdom lacks that Mantine and the console touch (matchMedia, ResizeObserver, scrollIntoView,
 * document.fonts), as inert stand-ins for the console's jsdom tests. Installed once per file, in `beforeAll`.
 */
export function installDomShims(): void {
  window.matchMedia ??= ((q: string) => ({ matches: false, media: q, onchange: null, addEventListener() {}, removeEventListener() {}, addListener() {}, removeListener() {}, dispatchEvent: () => false })) as typeof window.matchMedia;
  globalThis.ResizeObserver ??= class {
    observe() {}
    unobserve() {}
    disconnect() {}
  } as unknown as typeof ResizeObserver;
  Element.prototype.scrollIntoView ??= () => undefined;
  // The composer's autosizing textarea listens for font loads.
  if (!('fonts' in document)) Object.defineProperty(document, 'fonts', { value: new EventTarget() });
}
