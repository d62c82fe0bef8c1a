/**
 * The window and tray icon file, the same picture in development and in a packaged app. A packaged app gets it
 * from electron-builder.yml's `extraResources` (`resources/icon.png` → `<resourcesPath>/icon.png`): outside
 * app.asar, as a plain file every desktop environment's tray can read. In development (`npm run desktop`, which
 * runs dist/main/index.js of the checkout) it is the checkout's `resources/icon.png`, found from the folder of the
 * running main script (dist/main/, or main/ when run from source) by walking up to the first folder that has it. Not
 * up to a package.json: the build leaves a copy of the checkout's in dist/ (tsc emits the JSON modules it imports).
 */
import fs from 'node:fs';
import path from 'node:path';

/** The icon's name among a packaged app's resources (electron-builder.yml `extraResources` … `to`). */
export const PACKAGED_ICON = 'icon.png';

/** The checkout's icon, relative to its root (electron-builder.yml `extraResources` … `from`). */
export const SOURCE_ICON = 'resources/icon.png';

/**
 * The icon's absolute path. `packaged`: Electron's `app.isPackaged`; `resourcesPath`: `process.resourcesPath`;
 * `mainDir`: the folder of the running main script.
 */
export function appIconPath(opts: { packaged: boolean; resourcesPath: string; mainDir: string }): string {
  if (opts.packaged) return path.join(opts.resourcesPath, PACKAGED_ICON);
  let dir = path.resolve(opts.mainDir);
  while (!fs.existsSync(path.join(dir, SOURCE_ICON))) {
    const parent = path.dirname(dir);
    if (parent === dir) return path.resolve(opts.mainDir, '..', SOURCE_ICON); // no checkout around: its usual place
    dir = parent;
  }
  return path.join(dir, SOURCE_ICON);
}
