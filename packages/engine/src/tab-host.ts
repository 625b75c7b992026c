// An elected host tab's side of createEngine({ share: 'origin' }) where no SharedWorker exists (Chrome on Android) or
// can hold WebGPU: the tab that won the origin's Web Lock for a key runs a SharedHost in its own dedicated Worker
// (tab-host-worker.ts), and the other tabs reach it over a BroadcastChannel named by the key. Comlink stays the one
// RPC: each tab's session is a Comlink endpoint multiplexed over the channel by ids (channelEndpoint). A
// BroadcastChannel cannot carry MessagePorts, so nothing that needs one (an AbortSignal, a Comlink.proxy callback)
// crosses it; errors cross as serializeError's plain data. The host's life is a Web Lock its worker holds, named in
// every 'here' message, so the other tabs learn at once when it is gone.

import * as Comlink from 'comlink';
import type { SharedHost } from './shared-host.ts';

/** The BroadcastChannel of the tabs sharing the engine under `key`. */
export function hostChannelName(key: string): string {
  return `intab-host:${key}`;
}

/** What the channel carries besides Comlink's messages: a tab asking for the host, and the host's answer. */
export type ChannelHello = { type: 'hello'; from: string };
export type ChannelHere = { type: 'here'; host: string; life: string; to?: string };
type Wrapped = { from: string; to: string; msg: unknown };

/**
 * A Comlink endpoint between `self` and `peer` over a BroadcastChannel that others share: outgoing messages are tagged
 * with both ids, incoming ones are taken only from `peer` to `self`. Transfers are refused (a channel cannot carry them).
 */
export function channelEndpoint(channel: BroadcastChannel, self: string, peer: string): Comlink.Endpoint & { close(): void } {
  const listeners = new Map<EventListenerOrEventListenerObject, (ev: MessageEvent) => void>();
  return {
    /** Removes every listener this endpoint added to the channel (the channel itself stays open for others). */
    close() {
      for (const filtered of listeners.values()) channel.removeEventListener('message', filtered);
      listeners.clear();
    },
    postMessage(msg: unknown, transfer?: Transferable[]) {
      if (transfer?.length) throw new TypeError('A BroadcastChannel cannot carry MessagePorts (an AbortSignal or a callback): this call cannot reach the host tab.');
      channel.postMessage({ from: self, to: peer, msg } satisfies Wrapped);
    },
    addEventListener(type: string, listener: EventListenerOrEventListenerObject) {
      const filtered = (ev: MessageEvent) => {
        const d = ev.data as Partial<Wrapped> | null;
        if (!d || d.from !== peer || d.to !== self || !('msg' in d)) return;
        const inner = new MessageEvent('message', { data: d.msg });
        if (typeof listener === 'function') listener(inner);
        else listener.handleEvent(inner);
      };
      listeners.set(listener, filtered);
      channel.addEventListener(type as 'message', filtered);
    },
    removeEventListener(type: string, listener: EventListenerOrEventListenerObject) {
      const filtered = listeners.get(listener);
      if (filtered) channel.removeEventListener(type as 'message', filtered);
      listeners.delete(listener);
    },
  };
}

/**
 * Serves `host`'s sessions to the origin's other tabs on the channel of `key`: a session per tab that says hello
 * (exposed through Comlink on channelEndpoint), a 'here' answer naming the Web Lock `life` that this context holds for
 * as long as it serves, and one 'here' to all at the start (tabs that asked before this host listened ask again).
 * Returns a function that stops serving.
 */
export function serveTabs(host: SharedHost, key: string, life: string): () => void {
  const channel = new BroadcastChannel(hostChannelName(key));
  const id = crypto.randomUUID();
  const served = new Set<string>();
  const here = (to?: string): ChannelHere => ({ type: 'here', host: id, life, ...(to ? { to } : {}) });
  channel.addEventListener('message', (ev: MessageEvent) => {
    const d = ev.data as ChannelHello | null;
    if (d?.type !== 'hello' || typeof d.from !== 'string') return;
    if (!served.has(d.from)) {
      served.add(d.from);
      const session = host.session();
      const endpoint = channelEndpoint(channel, id, d.from);
      Comlink.expose(session, endpoint);
      // A session that ended (destroyed, or its tab gone) is let go of: its listener, and the tab's id.
      void session.ended.then(() => {
        endpoint.close();
        served.delete(d.from);
      });
    }
    channel.postMessage(here(d.from));
  });
  channel.postMessage(here());
  return () => channel.close();
}
