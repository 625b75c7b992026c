// The Service Worker of openai-relay.gpu.test.ts (Vite's dev server serves it as a module script; its scope is this
// folder). It serves intab's relay on `<folder>v1` (relayOpenAI), a blank page at `<folder>relay-client.html` for the
// test's iframe (a page this worker controls, whose fetches it sees), and, on the test's messages, reads a relayed
// response itself: `open` relays a chat request (relayRequest, to the open engine page, over the real Clients API),
// `read` takes that many pieces of its body, `cancel` cancels it. The reader is in this worker because the browser's
// own reader of a fetch() answered here drains the body whatever the page reads (Chromium buffers it in the page), so
// only a reader here can stop reading and hold the engine back.
import { relayOpenAI, relayRequest, type RelayClients } from './service-worker.ts';

interface TestMessage {
  cmd: 'open' | 'read' | 'cancel';
  body?: unknown;
  pieces?: number;
}
interface Scope {
  location: Location;
  clients: RelayClients & { claim(): Promise<void> };
  skipWaiting(): Promise<void>;
  addEventListener(type: 'install' | 'activate', listener: (e: { waitUntil(p: Promise<unknown>): void }) => void): void;
  addEventListener(type: 'fetch', listener: (e: { request: Request; respondWith(r: Response): void }) => void): void;
  addEventListener(type: 'message', listener: (e: { data: TestMessage; ports: readonly MessagePort[]; waitUntil(p: Promise<unknown>): void }) => void): void;
}

const sw = self as unknown as Scope;
const folder = new URL('./', sw.location.href).pathname;
const prefix = `${folder}v1`;

relayOpenAI(self, { prefix, openHint: 'the test page', pingTimeoutMs: 500 });
sw.addEventListener('install', () => void sw.skipWaiting());
sw.addEventListener('activate', (e) => e.waitUntil(sw.clients.claim()));
sw.addEventListener('fetch', (e) => {
  if (new URL(e.request.url).pathname !== `${folder}relay-client.html`) return;
  e.respondWith(new Response('<!doctype html><meta charset="utf-8"><title>relay client</title>', { headers: { 'content-type': 'text/html; charset=utf-8' } }));
});

let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
const decoder = new TextDecoder();
sw.addEventListener('message', (e) => {
  const port = e.ports[0];
  const m = e.data;
  e.waitUntil(
    (async () => {
      try {
        if (m.cmd === 'open') {
          const request = new Request(new URL(`${prefix}/chat/completions`, sw.location.href), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(m.body) });
          const res = await relayRequest(request, sw.clients, { prefix, pingTimeoutMs: 500 });
          reader = res.body!.getReader();
          port.postMessage({ status: res.status });
        } else if (m.cmd === 'read') {
          let text = '';
          let done = false;
          for (let i = 0; i < (m.pieces ?? 1) && !done; i++) {
            const r = await reader!.read();
            done = r.done;
            if (r.value) text += decoder.decode(r.value, { stream: true });
          }
          port.postMessage({ text, done });
        } else {
          await reader!.cancel();
          port.postMessage({});
        }
      } catch (err) {
        port.postMessage({ error: String(err) });
      }
    })(),
  );
});
