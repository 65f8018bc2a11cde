// The web console's build (`npm run build`): a static bundle in dist/console, which `onelog serve` serves at `/`.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  logLevel: 'warn',
  build: { outDir: fileURLToPath(new URL('../dist/console', import.meta.url)), emptyOutDir: true, reportCompressedSize: false },
});
