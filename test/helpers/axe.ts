/**
 * Accessibility checks of the console in Chromium with axe-core (evaluated through the devtools protocol, so the
 * page's CSP stays as it is), in both colour schemes, with a screenshot of each (test/helpers/screenshots.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { saveShot } from './screenshots.ts';

const AXE_SOURCE = fs.readFileSync(path.resolve('node_modules/axe-core/axe.min.js'), 'utf8');

export type Scheme = 'light' | 'dark';

/** The few browser globals used in the page (the tests compile without the DOM library). */
interface InPage {
  document: {
    documentElement: { getAttribute(name: string): string | null };
    getAnimations(): Array<{ playState: string }>;
  };
  CSSTransition: abstract new () => unknown;
}
export const SCHEMES: readonly Scheme[] = ['light', 'dark'];

interface AxeNode {
  target: string[];
  any?: Array<{ data?: { fgColor?: string; bgColor?: string; contrastRatio?: number } }>;
}
interface AxeResult {
  violations: Array<{ id: string; impact: string; nodes: AxeNode[] }>;
}

/** The page's serious and critical axe-core violations, one line each (rule, impact, the first few elements). */
export async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(ctx: unknown, o: unknown): Promise<AxeResult> } }).axe;
    const r = await axe.run((globalThis as unknown as { document: unknown }).document, { resultTypes: ['violations'] });
    const detail = (n: AxeNode) => {
      const d = n.any?.[0]?.data;
      return `${n.target.join(' ')}${d?.fgColor ? ` [${d.fgColor} on ${d.bgColor}: ${d.contrastRatio}]` : ''}`;
    };
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map(detail).join(' | ')}`);
  });
}

/** Emulates the OS colour scheme and waits until the console (colour scheme "System") has applied it. */
export async function useScheme(page: Page, scheme: Scheme): Promise<void> {
  await page.emulateMedia({ colorScheme: scheme });
  // Functions, not strings: the console's CSP has no 'unsafe-eval'.
  await page.waitForFunction((s) => (globalThis as unknown as InPage).document.documentElement.getAttribute('data-mantine-color-scheme') === s, scheme);
  await settled(page);
}

/** Waits until no CSS transition runs (colours mid-way through one would be judged, and photographed, wrongly). */
export async function settled(page: Page): Promise<void> {
  await page.waitForFunction(() => {
    const g = globalThis as unknown as InPage;
    return g.document.getAnimations().every((a) => !(a instanceof g.CSSTransition) || a.playState !== 'running');
  });
}

/**
 * Checks what the page shows now in both schemes: axe-core's serious and critical violations (returned, prefixed
 * with `name` and the scheme) and, unless `screenshot: false`, a screenshot `view-<name>-<scheme>.png` of each.
 * Leaves the light scheme on.
 */
export async function checkView(page: Page, name: string, { screenshot = true } = {}): Promise<string[]> {
  const report: string[] = [];
  for (const scheme of SCHEMES) {
    await useScheme(page, scheme);
    report.push(...(await seriousViolations(page)).map((v) => `${scheme} ${name}: ${v}`));
    if (screenshot) await saveShot(page, `view-${name}-${scheme}`);
  }
  await useScheme(page, 'light');
  return report;
}
