// Lint rules: typescript-eslint's recommended set, plus the layering of DESIGN.md §2 as import rules (in the spirit
// of Signal Desktop's): nothing outside main/ and preload/ imports electron; the console never imports the service;
// inside service/ each folder imports only the folders below it (LAYERS). test/lint/layering.test.ts shows a
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

const layerRules = Object.entries(LAYERS).map(([folder, allowed]) => {
  const forbidden = Object.keys(LAYERS).filter((f) => f !== folder && !allowed.includes(f));
  const patterns = forbidden.length === 0 ? [] : [
    {
      regex: `^(\\.\\./)+(${forbidden.join('|')})/`,
      message: `service/${folder}/ must not import ${forbidden.map((f) => `service/${f}/`).join(', ')} (layering, DESIGN.md §2).`,
    },
  ];
  return {
    files: [`service/${folder}/**/*.ts`],
    rules: { 'no-restricted-imports': ['error', { paths: [ELECTRON], patterns }] },
  };
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { files: ['bin/**/*.js', '*.config.{js,ts}'], languageOptions: { globals: globals.node } },
  {
    files: ['service/**/*.ts', 'test/**/*.ts', 'renderer/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': ['error', { paths: [ELECTRON] }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
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
);
