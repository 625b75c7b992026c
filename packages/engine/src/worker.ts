// The worker entry: the Engine, exposed to the main thread through Comlink, with intab's transfer handlers
// (AbortSignals and typed errors cross intact). The public package's worker file imports this module, so
// bundlers find it through `new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })`.

import * as Comlink from 'comlink';
import { Engine } from './engine.ts';
import { registerTransferHandlers } from './transfer.ts';

registerTransferHandlers();
Comlink.expose(new Engine());
