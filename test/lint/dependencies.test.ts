/**
 * `dependencies` in package.json are exactly what runs (issue 25 item 9): every package the service, the desktop
 * shell or bin/ loads at run time is a dependency, so `npm ci --omit=dev` keeps it, and every dependency is loaded
 * by them, so nothing a test or a build tool needs ships with the service. `tsx` is one: without a current dist/,
 * bin/switchboard.js runs the sources through tsx's loader, and an install without devDependencies cannot build
 * dist/ (TypeScript is one of them). Type-only imports load nothing and do not count.
 *
 * Two runtime imports are not dependencies on purpose: `electron`, which the Electron binary provides to main/ and
 * preload/ (electron-builder wants it among the devDependencies), and `vite`, which `serve` uses only to build the
 * console in a checkout (service/cli/console-build.ts; without it `serve` says in one line that the console could not
 * be built and answers `/` with how to build it).
 *
 * A package the install itself runs (package.json `postinstall`, which `npm ci --omit=dev` runs too) counts as used:
 * `patch-package`, which applies patches/ (a fix of the PostgreSQL driver) on every install.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const RUNTIME = ['service', 'main', 'preload', 'bin'];
const PROVIDED = ['electron', 'vite'];

/** Whether a call of `callee` loads its argument: `import(…)`, `require(…)`, `createRequire(…)(…)`. */
const loads = (callee: ts.Expression): boolean =>
  callee.kind === ts.SyntaxKind.ImportKeyword ||
  (ts.isIdentifier(callee) && callee.text === 'require') ||
  (ts.isCallExpression(callee) && ts.isIdentifier(callee.expression) && callee.expression.text === 'createRequire');

/** Packages the value imports (static, dynamic, re-exports, requires) of `file` name. */
function packagesOf(file: string): string[] {
  const kind = file.endsWith('.js') ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true, kind);
  const specifiers: string[] = [];
  const walk = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly)
      specifiers.push((node.moduleSpecifier as ts.StringLiteral).text);
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly)
      specifiers.push((node.moduleSpecifier as ts.StringLiteral).text);
    else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      !node.isTypeOnly
    )
      specifiers.push((node.moduleReference.expression as ts.StringLiteral).text);
    else if (
      ts.isCallExpression(node) &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0]) &&
      loads(node.expression)
    )
      specifiers.push(node.arguments[0].text);
    ts.forEachChild(node, walk);
  };
  walk(source);
  return specifiers
    .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
    .map((s) =>
      s
        .split('/')
        .slice(0, s.startsWith('@') ? 2 : 1)
        .join('/'),
    );
}

describe('package.json dependencies', () => {
  it('are exactly the packages the service, the desktop shell and bin/ load at run time', () => {
    const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as {
      dependencies: Record<string, string>;
      scripts?: Record<string, string>;
    };
    // The commands of the install's own script: `a && b` runs a and b.
    const installTools = (pkg.scripts?.postinstall ?? '')
      .split('&&')
      .map((command) => command.trim().split(/\s+/)[0]!)
      .filter((tool) => tool.length > 0);
    const files = RUNTIME.flatMap((dir) =>
      fs
        .readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .filter((f) => /\.(ts|cts|mts|js|mjs)$/.test(f) && !f.endsWith('.d.ts'))
        .map((f) => path.join(dir, f)),
    );
    const loaded = new Set(files.flatMap(packagesOf));
    expect(loaded.has('tsx'), 'bin/switchboard.js loads tsx for the sources').toBe(true);
    const declared = Object.keys(pkg.dependencies);
    expect({
      undeclared: [...loaded].filter((p) => !declared.includes(p) && !PROVIDED.includes(p)).sort(),
      unused: declared.filter((p) => !loaded.has(p) && !installTools.includes(p)).sort(),
    }).toEqual({ undeclared: [], unused: [] });
  });
});
