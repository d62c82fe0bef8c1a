/**
 * Debian's Chromium for the console e2e tests, launched the one way this machine allows: headless, no sandbox (root),
 * no GPU, and none of the background connections a closed network refuses (machines/node.md). Playwright drives it
 * through `executablePath`; its own browser download is never used.
 */
import { chromium, type Browser, type BrowserContext, type LaunchOptions, type Page } from 'playwright-core';

/** The browser binary: `CHROMIUM_PATH`, else Debian's `/usr/bin/chromium`. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Flags every launch passes (no sandbox as root, no GPU, no background networking, sync or first-run UI). */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** A headless browser without a profile (a page per test; close it when done). */
export function launchChromium(options: LaunchOptions = {}): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, ...options });
}

/** Options of a console context: the desktop viewport in the light scheme with reduced motion unless overridden. */
export type ConsoleContextOptions = Parameters<typeof chromium.launchPersistentContext>[1];

/**
 * A persistent context in `userDataDir` (its sessionStorage keeps the console's sign-in across navigations) and its
 * first page. `label` names the test file in page-error lines; page errors are printed, not thrown.
 */
export async function launchConsole(
  userDataDir: string,
  label: string,
  options: ConsoleContextOptions = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
    colorScheme: 'light',
    reducedMotion: 'reduce',
    ...options,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('pageerror', (err) => console.log(`[${label}] page error: ${err.message}`));
  return { context, page };
}

/** Signs the console in at `origin` with an API token and waits until its event stream is open. */
export async function signIn(page: Page, origin: string, token: string): Promise<void> {
  await page.goto(`${origin}/`);
  await page.getByTestId('token-input').fill(token);
  await page.getByRole('button', { name: 'Open console' }).click();
  await page.locator('[data-testid="live-indicator"][data-state="open"]').waitFor();
}
