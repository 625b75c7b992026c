// The SharedWorker entry (createEngine's `share: 'origin'`): one SharedHost for the origin, and for every tab that
// connects a HostSession exposed on the tab's port through Comlink, with intab's transfer handlers (AbortSignals and
// typed errors cross intact). The public package's shared-worker file imports this module, so bundlers find it
// through `new SharedWorker(new URL('./shared-worker.ts', import.meta.url), { type: 'module' })`.

import * as Comlink from 'comlink';
import { answerLifeLine } from './life-line.ts';
import { SharedHost } from './shared-host.ts';
import { registerTransferHandlers } from './transfer.ts';

registerTransferHandlers();
const host = new SharedHost();
self.addEventListener('connect', (ev: Event) => {
  const port = (ev as MessageEvent).ports[0];
  // The tab's life line to this worker (life-line.ts), taken before Comlink sees the message.
  port.addEventListener('message', (m: MessageEvent) => {
    if (answerLifeLine(m)) m.stopImmediatePropagation();
  });
  Comlink.expose(host.session(), port);
});
