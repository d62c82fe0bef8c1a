// Lint rules: typescript-eslint's recommended set, plus the layering of DESIGN.md §2 as import rules (in the spirit
// of Signal Desktop's): nothing outside main/ and preload/ imports electron; the console never imports the service;
// inside service/ each folder imports only the folders below it (LAYERS). test/lint/layering.test.ts shows a
// forbidden import failing.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const ELECTRON = { name: 'electron', message: 'Only main/ and preload/ may import electron.' };

/**
 * service/ folders and the service/ folders each must not import (relative imports only, at any depth).
 * Lower layers: net, config, db (+ events' bus), auth, webhooks, billing, engine; then http (with its WebSocket
 * stream); cli on top. The sandbox is a separate program that shares only the storage helpers and net/.
 */
const LAYERS = {
  net: ['config', 'db', 'events', 'auth', 'webhooks', 'billing', 'engine', 'http', 'cli', 'sandbox', 'secrets'],
  config: ['db', 'events', 'auth', 'webhooks', 'engine', 'http', 'cli', 'sandbox'],
  db: ['auth', 'webhooks', 'billing', 'engine', 'http', 'cli', 'sandbox'],
  events: ['auth', 'webhooks', 'billing', 'engine', 'http', 'cli', 'sandbox'],
  auth: ['webhooks', 'billing', 'engine', 'http', 'cli', 'sandbox'],
  webhooks: ['auth', 'billing', 'engine', 'http', 'cli', 'sandbox'],
  billing: ['auth', 'webhooks', 'engine', 'http', 'cli', 'sandbox'],
  secrets: ['db', 'auth', 'webhooks', 'billing', 'engine', 'http', 'cli', 'sandbox'],
  engine: ['auth', 'webhooks', 'billing', 'http', 'cli', 'sandbox'],
  http: ['cli', 'sandbox'],
  sandbox: ['events', 'auth', 'webhooks', 'billing', 'engine', 'http', 'cli', 'secrets'],
};

const layerRules = Object.entries(LAYERS).map(([folder, forbidden]) => ({
  files: [`service/${folder}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        paths: [ELECTRON],
        patterns: [
          {
            regex: `^(\\.\\./)+(${forbidden.join('|')})/`,
            message: `service/${folder}/ must not import ${forbidden.map((f) => `service/${f}/`).join(', ')} (layering, DESIGN.md §2).`,
          },
        ],
      },
    ],
  },
}));

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
