// Builds the operator console into dist/console (served by the service at `/`, loaded by the desktop window).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const here = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root: here,
  base: '/',
  plugins: [react()],
  css: { postcss: path.join(here, 'postcss.config.mjs') },
  build: {
    outDir: path.join(here, '../dist/console'),
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 2000,
  },
  server: {
    // `npm run dev:console` against a running `switchboard serve` on 7575.
    proxy: { '/api': { target: 'http://127.0.0.1:7575', ws: true } },
  },
});
