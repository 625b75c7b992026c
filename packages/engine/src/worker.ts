// The worker entry: the Engine, exposed to the main thread through Comlink, with intab's transfer handlers
// (AbortSignals and typed errors cross intact). The public package's worker file imports this module, so
// bundlers find it through `new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })`.

import * as Comlink from 'comlink';
import { Engine } from './engine.ts';
import { answerLifeLine } from './life-line.ts';
import { registerTransferHandlers } from './transfer.ts';

registerTransferHandlers();
// The main thread's life line (life-line.ts), taken before Comlink sees the message.
self.addEventListener('message', (ev: MessageEvent) => {
  if (answerLifeLine(ev)) ev.stopImmediatePropagation();
});
Comlink.expose(new Engine());
