// The dedicated Worker of a tab elected host of an engine its origin's tabs share (createEngine({ share: 'origin' })
// where there is no SharedWorker): a SharedHost whose first session is the host tab's own, on this worker's port, and
// whose other sessions are the other tabs', over the key's BroadcastChannel (tab-host.ts) once the tab says
// `intab:serve`. The worker holds the Web Lock named in that message while it lives: its end tells the other tabs the
// host is gone. The public package's tab-host-worker file imports this module, so bundlers find it.

import * as Comlink from 'comlink';
import { answerLifeLine } from './life-line.ts';
import { SharedHost } from './shared-host.ts';
import { serveTabs } from './tab-host.ts';
import { registerTransferHandlers } from './transfer.ts';

registerTransferHandlers();
const host = new SharedHost();
self.addEventListener('message', (ev: MessageEvent) => {
  if (answerLifeLine(ev)) return ev.stopImmediatePropagation();
  if (ev.data?.type !== 'intab:serve') return;
  ev.stopImmediatePropagation();
  const { key, life } = ev.data as { key: string; life: string };
  // Served once the lock is held, so a tab that waits for it is granted it only when this worker is gone.
  void navigator.locks.request(life, () => {
    serveTabs(host, key, life);
    return new Promise<never>(() => {});
  });
});
Comlink.expose(host.session());
