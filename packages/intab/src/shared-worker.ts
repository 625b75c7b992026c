// The SharedWorker that createEngine({ share: 'origin' }) connects to: one per origin, holding the engines its tabs
// share. It lives in this package, next to engine-backends.ts, so that `new SharedWorker(new URL('./shared-worker.ts',
// import.meta.url), { type: 'module' })` is resolved and bundled by the app's bundler with no file to copy by hand.

import '@intab/engine/shared-worker';
