// The dedicated Worker of a tab elected to host the engine its origin's tabs share where there is no SharedWorker
// (tab-election.ts). It lives in this package, next to engine-backends.ts, so that `new Worker(new URL(
// './tab-host-worker.ts', import.meta.url), { type: 'module' })` is resolved and bundled by the app's bundler.

import '@intab/engine/tab-host-worker';
