// Builds the operator console into dist/console (served by the service at `/`, loaded by the desktop window).
// Views are separate chunks (loaded when opened), React and Mantine a shared vendor chunk; every text asset is
// written pre-compressed (.br and .gz) next to itself, which the service sends to browsers that accept it.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.join(here, '../dist/console');

/** Writes `file.br` and `file.gz` beside each compressible asset of at least 1 KiB. */
function precompress(): Plugin {
  return {
    name: 'switchboard-precompress',
    apply: 'build',
    closeBundle() {
      const walk = (dir: string): string[] =>
        fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
      for (const file of walk(outDir)) {
        if (!/\.(js|css|html|svg|json)$/.test(file)) continue;
        const data = fs.readFileSync(file);
        if (data.length < 1024) continue;
        fs.writeFileSync(`${file}.br`, zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }));
        fs.writeFileSync(`${file}.gz`, zlib.gzipSync(data, { level: 9 }));
      }
    },
  };
}

export default defineConfig({
  root: here,
  base: '/',
  plugins: [react(), precompress()],
  css: { postcss: path.join(here, 'postcss.config.mjs') },
  build: {
    outDir,
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 2000,
    rollupOptions: {
      output: {
        manualChunks(id) {
          if (/node_modules[\\/](react|react-dom|scheduler)[\\/]/.test(id)) return 'react';
          if (/node_modules[\\/]@mantine[\\/]/.test(id)) return 'mantine';
          if (/node_modules[\\/]@tabler[\\/]/.test(id)) return 'icons';
          return undefined;
        },
      },
    },
  },
  server: {
    // `npm run dev:console` against a running `switchboard serve` on 7575.
    proxy: { '/api': { target: 'http://127.0.0.1:7575', ws: true } },
  },
});
