// Lint rules: typescript-eslint's recommended set, plus the layering of docs/architecture.md ("Layering: who may
// import whom") as import rules (in the spirit of Signal Desktop's): nothing outside main/ and preload/ imports
// electron; the console never imports the service; inside service/ each folder imports only the folders below it
// (LAYERS), and its two programs (index.ts, session-worker.ts) only what they assemble (PROGRAMS); Electron's main
// process (main/) only the side-effect-free bottom of the service (MAIN). test/lint/layering.test.ts shows each
// forbidden import failing and checks that the allowed graph has no cycles.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const ELECTRON = { name: 'electron', message: 'Only main/ and preload/ may import electron.' };

/**
 * The service/ folders, bottom up, each with the service/ folders it may import (relative imports, at any depth);
 * any other service/ folder is forbidden to it. Every folder imports only folders listed before it, so the allowed
 * import graph has no cycles (test/lint/layering.test.ts checks that too):
 * net and secrets at the bottom; config; db (SQL, the group commit); events (the event log); then auth, webhooks
 * (the outbox and its dispatcher), billing and engine side by side; http (with its WebSocket stream); cli on top.
 * The sandbox is a separate program that shares only the storage helpers, config and net/.
 * Files at service/'s root (index.ts assembles the service; errors.ts is shared by all) are not a layer.
 */
export const LAYERS = {
  net: [],
  secrets: [],
  config: ['net', 'secrets'],
  db: ['net', 'secrets', 'config'],
  events: ['net', 'secrets', 'config', 'db'],
  auth: ['net', 'secrets', 'config', 'db', 'events'],
  webhooks: ['net', 'secrets', 'config', 'db', 'events'],
  billing: ['net', 'secrets', 'config', 'db', 'events'],
  engine: ['net', 'secrets', 'config', 'db', 'events'],
  http: ['net', 'secrets', 'config', 'db', 'events', 'auth', 'webhooks', 'billing', 'engine'],
  sandbox: ['net', 'config', 'db'],
  cli: ['net', 'secrets', 'config', 'db', 'events', 'auth', 'webhooks', 'billing', 'engine', 'http', 'sandbox'],
};

/**
 * The files at service/'s root that are programs, not layers, with the service/ folders each may import: index.ts
 * assembles the whole service (cli/ above it starts it); session-worker.ts is a session thread's program, an engine
 * over the thread's own store, event log and webhook outbox (no HTTP, auth or billing there). Neither imports the
 * other or anything outside service/, and no layer but cli/ imports either.
 */
export const PROGRAMS = {
  'index.ts': ['net', 'secrets', 'config', 'db', 'events', 'auth', 'webhooks', 'billing', 'engine', 'http', 'sandbox'],
  'session-worker.ts': ['net', 'secrets', 'config', 'db', 'events', 'webhooks', 'engine'],
};

/**
 * service/data-plane.ts assembles the store, the event log and the webhook outbox (docs/architecture.md § Data plane):
 * it imports only `imports`; besides the programs, only the layers `importedBy` (above webhooks/) import it — a layer
 * below would reach webhooks/ through it.
 */
const DATA_PLANE = {
  imports: ['net', 'secrets', 'config', 'db', 'events', 'webhooks'],
  importedBy: ['http', 'cli'],
};

/**
 * main/ is Electron's main process (window, tray, menus, keychain, updater). The service runs in its own process,
 * started from main/service-host.ts — the one file of main/ that imports the service, and which nothing imports —
 * so main/ may take from service/ only these side-effect-free bottom layers (settings, data dir, keychain), the
 * host's messages from main/host-protocol.ts, and none of the packages that are the service (Baileys, SQLite,
 * Fastify…): they would load into the process that draws the window.
 */
export const MAIN = {
  service: ['config', 'secrets'],
  packages: ['@whiskeysockets/baileys', 'better-sqlite3', 'fastify', 'ws', 'sharp', 'libsignal', 'undici', 'pino'],
};

const ARCHITECTURE = 'docs/architecture.md, "Layering: who may import whom"';
const programFiles = Object.keys(PROGRAMS).map((f) => f.replace(/\.ts$/, ''));

const layerRules = Object.entries(LAYERS).map(([folder, allowed]) => {
  const forbidden = Object.keys(LAYERS).filter((f) => f !== folder && !allowed.includes(f));
  const programs = folder === 'cli' ? programFiles.filter((p) => p !== 'index') : programFiles;
  const patterns = [
    ...(forbidden.length === 0
      ? []
      : [
          {
            regex: `^(\\.\\./)+(${forbidden.join('|')})/`,
            message: `service/${folder}/ must not import ${forbidden.map((f) => `service/${f}/`).join(', ')} (layering, ${ARCHITECTURE}).`,
          },
        ]),
    {
      regex: `^(\\.\\./)+(${programs.join('|')})\\.ts$`,
      message: `service/${folder}/ must not import ${programs.map((p) => `service/${p}.ts`).join(' or ')}: programs, not layers (${ARCHITECTURE}).`,
    },
    ...(DATA_PLANE.importedBy.includes(folder)
      ? []
      : [
          {
            regex: '^(\\.\\./)+data-plane\\.ts$',
            message: `service/${folder}/ must not import service/data-plane.ts: it assembles webhooks/ (${ARCHITECTURE}).`,
          },
        ]),
  ];
  return {
    files: [`service/${folder}/**/*.ts`],
    rules: { 'no-restricted-imports': ['error', { paths: [ELECTRON], patterns }] },
  };
});

const programRules = Object.entries(PROGRAMS).map(([file, allowed]) => {
  const forbidden = Object.keys(LAYERS).filter((f) => !allowed.includes(f));
  const others = programFiles.filter((p) => `${p}.ts` !== file);
  return {
    files: [`service/${file}`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [ELECTRON],
          patterns: [
            {
              regex: `^\\./(${forbidden.join('|')})/`,
              message: `service/${file} must not import ${forbidden.map((f) => `service/${f}/`).join(', ')} (layering, ${ARCHITECTURE}).`,
            },
            {
              regex: `^(\\.\\./|\\./(${others.join('|')})\\.ts$)`,
              message: `service/${file} must not import ${others.map((p) => `service/${p}.ts`).join(', ')} or anything outside service/ (layering, ${ARCHITECTURE}).`,
            },
          ],
        },
      ],
    },
  };
});

const dataPlaneRules = [
  {
    files: ['service/data-plane.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [ELECTRON],
          patterns: [
            {
              regex: `^\\./(${Object.keys(LAYERS).filter((f) => !DATA_PLANE.imports.includes(f)).join('|')})/`,
              message: `service/data-plane.ts imports only ${DATA_PLANE.imports.map((f) => `service/${f}/`).join(', ')} (${ARCHITECTURE}).`,
            },
            {
              regex: `^(\\.\\./|\\./(${programFiles.join('|')})\\.ts$)`,
              message: `service/data-plane.ts must not import the programs or anything outside service/ (${ARCHITECTURE}).`,
            },
          ],
        },
      ],
    },
  },
];

const servicePackages = MAIN.packages.map((name) => ({
  name,
  message: `main/ is Electron's main process: ${name} belongs to the service, which runs in its own process (main/service-host.ts; ${ARCHITECTURE}).`,
}));

const mainRules = [
  {
    files: ['main/**/*.ts'],
    ignores: ['main/service-host.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: servicePackages,
          patterns: [
            {
              regex: `^(\\.\\./)+service/(?!(${MAIN.service.join('|')})/)`,
              message: `main/ is Electron's main process: from service/ it may import only ${MAIN.service.map((f) => `service/${f}/`).join(' and ')}; the service runs in its own process (main/service-host.ts; ${ARCHITECTURE}).`,
            },
            {
              regex: '^\\./service-host(\\.ts)?$',
              message: `main/service-host.ts is the service process's entry: nothing imports it; its messages are in main/host-protocol.ts (${ARCHITECTURE}).`,
            },
            { group: ['@fastify/*'], message: `main/ is Electron's main process: Fastify belongs to the service (${ARCHITECTURE}).` },
          ],
        },
      ],
    },
  },
  {
    // The service process's entry never imports electron (it also runs under plain Node) nor the shell.
    files: ['main/service-host.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'electron', message: 'main/service-host.ts runs the service under plain Node too: no electron.' }],
          patterns: [
            {
              regex: '^\\./(?!host-protocol\\.ts$)',
              message: `main/service-host.ts may import from main/ only ./host-protocol.ts (${ARCHITECTURE}).`,
            },
          ],
        },
      ],
    },
  },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { files: ['bin/**/*.js', '*.config.{js,ts}'], languageOptions: { globals: globals.node } },
  {
    // Nothing outside main/ and preload/ imports electron (bin/, scripts/, bench/ and the configs included).
    files: ['**/*.{js,mjs,cjs,ts,mts,cts,tsx}'],
    ignores: ['main/**', 'preload/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [ELECTRON] }] },
  },
  {
    files: ['service/**/*.ts', 'test/**/*.ts', 'renderer/**/*.{ts,tsx}', 'main/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }] },
  },
  {
    files: ['renderer/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [ELECTRON],
          patterns: [
            {
              regex: '^(\\.\\./)+(service|main|preload)/',
              message: 'The console talks to the service over HTTP only: no imports from service/, main/ or preload/.',
            },
          ],
        },
      ],
    },
  },
  ...layerRules,
  ...programRules,
  ...dataPlaneRules,
  ...mainRules,
);
