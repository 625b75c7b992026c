// The module Worker that createEngine() spawns. It lives in this package, next to engine.ts, so that
// `new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })` is resolved and bundled by the
// app's bundler (Vite, webpack 5, Parcel) with no worker file to copy by hand. All it does is start the engine.

import '@intab/engine/worker';
