// Production build of the offline assistant: the app (index.html) and its API page (api.html), the engine's
// worker chunk, onnxruntime-web's wasm, and the Service Worker (src/sw.ts, built by vite-plugin-pwa's injectManifest with the list of
// every built file to precache) and the web app manifest. `node scripts/pwa.mjs` builds and serves it.
import { defineConfig } from 'vite';
import { VitePWA } from 'vite-plugin-pwa';
import { fileURLToPath } from 'node:url';
import { intabSourceAliases } from '../../scripts/intab-source.ts';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  root: here('.'),
  base: './',
  // `intab` from its sources, not its dist/ (which only the published tarball has); vite-plugin-pwa builds the Service
  // Worker with this `resolve` too.
  resolve: { alias: intabSourceAliases() },
  logLevel: 'warn',
  build: {
    outDir: here('dist'),
    emptyOutDir: true,
    target: 'es2022',
    rolldownOptions: { input: { main: here('index.html'), api: here('api.html') } },
  },
  worker: { format: 'es' },
  plugins: [
    VitePWA({
      strategies: 'injectManifest',
      srcDir: 'src',
      filename: 'sw.ts',
      injectRegister: false,
      manifest: {
        name: 'intab assistant',
        short_name: 'Assistant',
        description: 'An assistant that runs in this tab on WebGPU and keeps working offline.',
        start_url: './',
        scope: './',
        display: 'standalone',
        background_color: '#fbfbfd',
        theme_color: '#254ed6',
        icons: [
          { src: 'icon-192.png', sizes: '192x192', type: 'image/png' },
          { src: 'icon-512.png', sizes: '512x512', type: 'image/png' },
          { src: 'icon-512.png', sizes: '512x512', type: 'image/png', purpose: 'maskable' },
        ],
      },
      injectManifest: {
        // .wasm: onnxruntime-web's binary (from the package, emitted by this build), which runs the model where WebGPU
        // is missing or software-only; offline, it must come from the cache like the rest of the app.
        globPatterns: ['**/*.{js,css,html,png,webmanifest,wasm}'],
        // The engine's worker chunk carries the kernels and tokenizers; ORT's largest wasm (its JSPI build) is 16.8 MB.
        maximumFileSizeToCacheInBytes: 48 << 20,
        rollupFormat: 'iife',
      },
    }),
  ],
});
