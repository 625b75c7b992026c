// Production build of e2e/pages/csp.html (the page e2e/csp.spec.ts serves under a strict CSP): the page, intab's
// worker chunk and onnxruntime-web's wasm as files of its own origin, as an app ships them. The spec sets outDir.
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  logLevel: 'warn',
  build: { target: 'es2022', emptyOutDir: true, rolldownOptions: { input: fileURLToPath(new URL('csp.html', import.meta.url)) } },
  worker: { format: 'es' },
});
