// The worker entry: the Engine, exposed to the main thread through Comlink, with intab's transfer handlers
// (AbortSignals and typed errors cross intact). The public package's worker file imports this module, so
// bundlers find it through `new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })`.

import * as Comlink from 'comlink';
import { Engine } from './engine.ts';
import { registerTransferHandlers } from './transfer.ts';

registerTransferHandlers();
// The main thread's life line: this worker holds a Web Lock for as long as it lives, and the main thread waits for the
// same lock, which the browser grants it only when this worker is gone (terminated, or killed for memory: neither sends
// anything), so every pending call is rejected instead of hanging. Taken before Comlink sees the message.
self.addEventListener('message', (ev: MessageEvent) => {
  if (ev.data?.type !== 'intab:life-line') return;
  ev.stopImmediatePropagation();
  const port = ev.ports[0];
  void navigator.locks?.request(String(ev.data.lock), () => {
    port?.postMessage('held');
    return new Promise<never>(() => {}); // held until this worker ends
  });
});
Comlink.expose(new Engine());
