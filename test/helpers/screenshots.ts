/**
 * Screenshots from the Chromium tests: every run writes them to `test-results/screenshots/<name>.png`; with
 * `UPDATE_SCREENSHOTS=1` they are also copied to `docs/screenshots/`, the copies the docs link to (so a normal run
 * never changes tracked files).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';

export const SHOTS_DIR = path.resolve('test-results/screenshots');
export const DOCS_SHOTS_DIR = path.resolve('docs/screenshots');

/** Whether this run refreshes the docs' copies (`UPDATE_SCREENSHOTS=1`). */
export const updatingDocs = (): boolean => !!process.env.UPDATE_SCREENSHOTS && process.env.UPDATE_SCREENSHOTS !== '0';

/** Screenshots `page`'s viewport as `<name>.png` (and into docs/screenshots/ when updating); returns the path. */
export async function saveShot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SHOTS_DIR, { recursive: true });
  const file = path.join(SHOTS_DIR, `${name}.png`);
  await page.screenshot({ path: file });
  if (updatingDocs()) {
    fs.mkdirSync(DOCS_SHOTS_DIR, { recursive: true });
    fs.copyFileSync(file, path.join(DOCS_SHOTS_DIR, `${name}.png`));
  }
  return file;
}
