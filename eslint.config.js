// Lint rules: typescript-eslint's recommended set, plus the layering rule of DESIGN.md §2 —
// nothing outside main/ and preload/ may import electron.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { files: ['bin/**/*.js', '*.config.{js,ts}'], languageOptions: { globals: globals.node } },
  {
    files: ['service/**/*.ts', 'test/**/*.ts', 'renderer/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'electron', message: 'Only main/ and preload/ may import electron.' }] }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
);
