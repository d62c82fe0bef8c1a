/**
 * No dead exports (issue 25 item 9): every function, constant, class or type exported by a module of the service
 * or the desktop shell is used somewhere — in the service, the shell, the console, the tests, benchmarks, scripts
 * or bin/. A name is counted as a word over all those sources, so an export that nothing names but its own
 * declaration is dead code: delete it (or stop exporting a name used only inside its module, then it counts as
 * used there).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SOURCES = ['service', 'main', 'preload', 'renderer/src', 'test', 'bench', 'scripts', 'bin'];
const CHECKED = ['service', 'main', 'preload'];
const CODE = /\.(ts|tsx|cts|mts|js|mjs|cjs)$/;

const filesUnder = (dir: string) =>
  fs.existsSync(dir)
    ? fs
        .readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .filter((f) => CODE.test(f) && !f.includes('node_modules'))
        .map((f) => path.join(dir, f))
    : [];

describe('dead code', () => {
  it('every export of service/, main/ and preload/ is named somewhere besides its declaration', () => {
    const files = SOURCES.flatMap(filesUnder);
    const texts = new Map(files.map((f) => [f, fs.readFileSync(f, 'utf8')]));
    const words = new Map<string, number>();
    for (const text of texts.values())
      for (const w of text.match(/[A-Za-z_$][\w$]*/g) ?? []) words.set(w, (words.get(w) ?? 0) + 1);

    const dead: string[] = [];
    for (const [file, text] of texts) {
      if (!CHECKED.some((dir) => file.startsWith(`${dir}${path.sep}`))) continue;
      const exported =
        /^export (?:declare )?(?:async )?(?:function\*?|const|let|class|abstract class|type|interface|enum) ([A-Za-z_$][\w$]*)/gm;
      for (const [, name] of text.matchAll(exported)) if ((words.get(name!) ?? 0) <= 1) dead.push(`${file}: ${name}`);
    }
    expect(files.length).toBeGreaterThan(100);
    expect(dead).toEqual([]);
  });
});
