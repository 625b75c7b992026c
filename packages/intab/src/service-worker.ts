// intab/service-worker: an OpenAI-compatible endpoint on the page's own origin, served by its Service Worker.
// Every request under the prefix (`POST /v1/chat/completions` and `POST /v1/completions`, streamed as SSE or not;
// `GET /v1/models`) is relayed over a MessageChannel to an open page whose engine answers it with intab's OpenAI HTTP
// core (routes, errors and SSE are the core's, none of them this module's): a page that called serveOpenAI(engine)
// from 'intab', or any tab attached to the origin's shared engine (createEngine({ share: 'origin' })), which answers
// by itself, so every page of the origin shares that one engine and its batching. The shared engine is reached
// through its tabs, not its SharedWorker: Chromium lists the SharedWorker among this worker's clients (type
// 'sharedworker') but delivers nothing posted to it (a worker has no navigator.serviceWorker there; measured on
// Chromium 150). The answer streams back as the response body, pulled: the page reads the engine's next chunk only
// when the response's reader asks for one (see relayRequest), so the output waits in the engine, whose full queue
// pauses the sequence, never here. (Chromium's own reader of a fetch() answered here takes the whole body into the
// page, however slowly the page reads it.)
// The Service Worker never holds the model: it is stopped when idle, and WebGPU there is unreliable. With no such
// page open (no tab holds or attaches to the shared engine), the answer is a 503 in OpenAI's error format saying what
// to open; aborting the fetch (the client's AbortSignal, a closed tab) aborts the engine's request. Only the origin's
// own pages are answered: another site's form POST or link into the scope is a 403 (see foreignRequest). This module
// imports nothing of intab but the dependency-free error base class: it stays small in a Service Worker bundle.
//
// @example
// // sw.ts (your Service Worker)
// import { relayOpenAI } from 'intab/service-worker';
// relayOpenAI(self);

import { IntabError, errorClass } from '@intab/errors';

export interface RelayOptions {
  /** The path prefix served [/v1]; the page answers the paths under it as OpenAI's under /v1 ('/api/v1/models' as '/v1/models'). */
  prefix?: string;
  /** How long a page has to answer "do you hold an engine?" [1000 ms]. */
  pingTimeoutMs?: number;
  /** Shown in the 503 when no page holds an engine [the page that serves the model]. */
  openHint?: string;
}

/** What the relay needs of the Service Worker's clients (ServiceWorkerGlobalScope.clients). */
export interface RelayClients {
  matchAll(options?: { type?: 'window' | 'worker' | 'sharedworker' | 'all'; includeUncontrolled?: boolean }): Promise<readonly { id: string; postMessage(message: unknown, transfer: Transferable[]): void }[]>;
  /** A client (its `url` is read), or undefined when gone or of another origin. */
  get(id: string): Promise<unknown>;
}

/** A fetch event, as much as the relay uses of it. */
export interface RelayFetchEvent {
  readonly request: Request;
  /** The client (page, worker) that made the request; for a navigation, the one that started it, if any. */
  readonly clientId?: string;
  respondWith(response: Response | Promise<Response>): void;
}

/** The Service Worker's global scope (`self`), as much as the relay uses of it. */
export interface RelayScope {
  readonly location: { readonly origin: string };
  readonly clients: RelayClients;
  addEventListener(type: 'fetch', listener: (event: RelayFetchEvent) => void): void;
}

/**
 * relayOpenAI was given a scope that is not a Service Worker's (a page's `window`, a Web Worker's `self`): it answers
 * fetches only in the script that `navigator.serviceWorker.register()` runs. Thrown at once, where it was called.
 */
export class ServiceWorkerScopeError extends errorClass(IntabError, 'ServiceWorkerScopeError', 'not_a_service_worker')<{
  /** The function that refused it. */
  readonly caller: string;
  /** What it was given, e.g. 'Window', 'DedicatedWorkerGlobalScope', 'undefined'. */
  readonly given: string;
}> {
  constructor(caller: string, given: string) {
    super(
      { caller, given },
      `${caller} runs in your Service Worker's script, whose global scope (self) has clients and fetch events; it was given ${given === 'undefined' || given === 'null' ? given : `${/^[AEIOU]/.test(given) ? 'an' : 'a'} ${given}`}. ` +
        "Call it in the script you register with navigator.serviceWorker.register('/sw.js') (with Vite, build that script with serviceWorker() from 'intab/vite'), " +
        "and call serveOpenAI(engine) from 'intab' in the page instead.",
    );
  }
}

const servedPrefix = (options: RelayOptions) => (options.prefix ?? '/v1').replace(/\/+$/, '');
const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const error = (status: number, message: string, type: string, code: string | null) => json(status, { error: { message, type, param: null, code } });

/** `scope` when it is a Service Worker's global scope (as much as the relay uses of it), else a ServiceWorkerScopeError. */
function serviceWorkerScope(scope: unknown, caller: string): RelayScope {
  const s = scope as { location?: { origin?: unknown }; clients?: { matchAll?: unknown; get?: unknown }; addEventListener?: unknown } | null | undefined;
  if (
    typeof s?.addEventListener === 'function' &&
    typeof s.location?.origin === 'string' &&
    typeof s.clients?.matchAll === 'function' &&
    typeof s.clients.get === 'function'
  ) {
    return s as RelayScope;
  }
  // '[object Window]', '[object DedicatedWorkerGlobalScope]': the realm's own name for it.
  const given = s === null || s === undefined ? String(s) : Object.prototype.toString.call(s).slice(8, -1);
  throw new ServiceWorkerScopeError(caller, given === 'Object' ? 'plain object without clients, location and addEventListener' : given);
}

/**
 * Makes the Service Worker answer `<prefix>/...` requests of its own origin through an engine page: one that called
 * serveOpenAI(engine), or a tab attached to the origin's shared engine (`share: 'origin'`, which answers by itself, no
 * serveOpenAI call needed), whichever answers its ping first. Call it in your Service Worker's script, before other
 * fetch handlers (a precache's navigation route) so they do not take these requests. `scope` is the Service Worker's
 * global scope, `self` [globalThis]: TypeScript types `self` by the tsconfig's lib (a `Window` under "DOM", a
 * `WorkerGlobalScope` under "WebWorker", the ServiceWorkerGlobalScope you declare), and any of them is taken; what it
 * is at run time is checked, and anything but a Service Worker's scope throws a ServiceWorkerScopeError. Requests that
 * do not come from a page of the origin (see foreignRequest) are a 403 in OpenAI's error format.
 * @example
 * // src/sw.ts, registered with navigator.serviceWorker.register('/sw.js') (see serviceWorker() in 'intab/vite')
 * import { relayOpenAI } from 'intab/service-worker';
 * relayOpenAI(self, { openHint: "the chat (this site's main page)" });
 */
export function relayOpenAI(scope: RelayScope | typeof globalThis = globalThis, options: RelayOptions = {}): void {
  const sw = serviceWorkerScope(scope, 'relayOpenAI');
  const prefix = servedPrefix(options);
  sw.addEventListener('fetch', (event) => {
    const url = new URL(event.request.url);
    if (url.origin !== sw.location.origin || (url.pathname !== prefix && !url.pathname.startsWith(`${prefix}/`))) return;
    event.respondWith(
      (async () => {
        const client = event.clientId ? ((await sw.clients.get(event.clientId)) as { url?: unknown } | undefined) : undefined;
        const refused = foreignRequest(event.request, sw.location.origin, typeof client?.url === 'string' ? client.url : undefined);
        return refused ? error(403, refused.message, 'invalid_request_error', refused.code) : relayRequest(event.request, sw.clients, options);
      })(),
    );
  });
}

// ---- who may ask ----

/**
 * Why a request to the endpoint is refused, or undefined when a page (or worker) of `origin` made it with fetch.
 * The model answers whoever reaches it, with the visitor's machine, so another site must not: a Service Worker
 * also sees navigations into its scope from anywhere (another site's `<form method=POST>` with a text/plain body
 * shaped as JSON, a link), though never another site's subresource requests (a no-cors fetch, an `<img>`: those
 * go to the network, where no model is). What is checked the page cannot forge: the Origin and Sec-Fetch-Site
 * headers where the browser shows them to the worker (Chromium sends Origin on a cross-site form POST; the
 * Sec-Fetch-* headers are added after the Service Worker, so it seldom sees them), the requesting client's URL
 * (`clientUrl`, from the event's clientId), and the request's mode: a navigation is refused wherever it comes
 * from (a link from another site carries neither Origin nor a client of ours), and so is a no-cors request (how
 * markup such as `<img>` fetches; an API client uses fetch's default, cors).
 * @example
 * const refused = foreignRequest(event.request, self.location.origin, (await self.clients.get(event.clientId))?.url);
 * if (refused) return new Response(JSON.stringify({ error: { message: refused.message } }), { status: 403 });
 */
export function foreignRequest(request: Pick<Request, 'headers' | 'mode'>, origin: string, clientUrl?: string): { code: string; message: string } | undefined {
  const crossOrigin = (from: string) => ({
    code: 'cross_origin',
    message: `This OpenAI endpoint answers the pages of ${origin} only, and this request came from ${from}: call it from a page of ${origin}.`,
  });
  const sentBy = request.headers.get('origin');
  if (sentBy !== null && sentBy !== origin) return crossOrigin(sentBy === 'null' ? 'an opaque origin (a sandboxed frame, a data: URL)' : sentBy);
  const site = request.headers.get('sec-fetch-site');
  // 'none': the user's own doing (the address bar, a bookmark), always a navigation, refused as one below.
  if (site !== null && site !== 'same-origin' && site !== 'none') return crossOrigin(`a ${site} page`);
  if (clientUrl !== undefined && new URL(clientUrl).origin !== origin) return crossOrigin(new URL(clientUrl).origin);
  if (request.mode === 'navigate') {
    return { code: 'navigation', message: `This OpenAI endpoint answers fetch() from the pages of ${origin}, not navigations (a link, a form, the address bar): call it with fetch or an OpenAI client.` };
  }
  if (request.mode === 'no-cors') {
    return { code: 'no_cors', message: "This OpenAI endpoint does not answer no-cors requests (how markup such as <img> fetches): call it with fetch's default mode, 'cors'." };
  }
  return undefined;
}

// ---- relaying ----

/**
 * Answers one request through an engine page (or with a 503 when none is open). It does not check who asks:
 * relayOpenAI does (foreignRequest), before calling it.
 *
 * The body is pulled, end to end: the response's stream holds at most one piece, and each time it wants one (its
 * `pull()`, when the HTTP reader has taken what it held) it sends the page `{ type: 'pull' }`; the page reads the
 * engine's next chunk for each pull and no sooner (the request says `pull: true`). A reader that stops reading thus
 * leaves the engine's per-sequence queue full and the sequence paused, its pages kept, until it reads on. A page of
 * an older intab that ignores pulls and sends pieces as they come is still answered: every piece is queued.
 */
export async function relayRequest(request: Request, clients: RelayClients, options: RelayOptions = {}): Promise<Response> {
  if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers: { allow: 'GET, POST, OPTIONS' } });
  const page = await findEnginePage(clients, options.pingTimeoutMs ?? 1000);
  if (!page) {
    return error(
      503,
      `No open page holds an intab engine to answer this request: open ${options.openHint ?? 'the page that loads the model'} (and let it load the model), then retry.`,
      'service_unavailable',
      'no_engine',
    );
  }
  const url = new URL(request.url);
  const body = request.method === 'GET' || request.method === 'HEAD' ? '' : await request.text();
  // The page serves OpenAI's paths: under another prefix, the same path under /v1.
  const prefix = servedPrefix(options);
  const path = url.pathname === prefix || url.pathname.startsWith(`${prefix}/`) ? `/v1${url.pathname.slice(prefix.length)}` : url.pathname;
  const { port1, port2 } = new MessageChannel();
  page.postMessage({ type: 'intab:request', method: request.method, path: path + url.search, body, pull: true }, [port2]);
  const encoder = new TextEncoder();
  let closed = false;
  let head: (h: { status: number; headers: Record<string, string> }) => void;
  const headed = new Promise<{ status: number; headers: Record<string, string> }>((r) => (head = r));
  // The stream's pending pull(): settled by the piece it asked for (or the end), so that it asks for the next one
  // only when the reader has taken that piece.
  let pulled: (() => void) | undefined;
  const settle = () => {
    const p = pulled;
    pulled = undefined;
    p?.();
  };
  let bodyController: ReadableStreamDefaultController<Uint8Array> | undefined;
  const abort = () => {
    if (closed) return;
    closed = true;
    port1.postMessage({ type: 'abort' });
    port1.close();
    settle();
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        bodyController = controller;
        port1.onmessage = (e: MessageEvent) => {
          const m = e.data as { type: string; status?: number; headers?: Record<string, string>; chunk?: string };
          if (m.type === 'head') head({ status: m.status!, headers: m.headers ?? {} });
          else if (m.type === 'body' && !closed) {
            controller.enqueue(encoder.encode(m.chunk));
            settle();
          } else if (m.type === 'end' && !closed) {
            closed = true;
            port1.close();
            controller.close();
            settle();
          }
        };
        // The page may go away (tab closed) without a word: then the response fails instead of hanging.
        const watch = setInterval(async () => {
          if (closed) return clearInterval(watch);
          if (!(await clients.get(page.id))) {
            clearInterval(watch);
            if (closed) return;
            closed = true;
            port1.close();
            head({ status: 503, headers: {} });
            controller.error(new Error('the page holding the engine was closed'));
            settle();
          }
        }, 2000);
      },
      // Called when the stream holds less than its high-water mark (one piece): one credit to the page per call.
      pull() {
        if (closed) return;
        port1.postMessage({ type: 'pull' });
        return new Promise<void>((resolve) => (pulled = resolve));
      },
      cancel: abort,
    },
    { highWaterMark: 1 },
  );
  // The client went away: the engine's request is aborted, and a reader still holding the body sees why.
  request.signal?.addEventListener(
    'abort',
    () => {
      if (closed) return;
      abort();
      bodyController?.error(request.signal.reason);
      head({ status: 499, headers: {} }); // nginx's "client closed request": nobody is left to see it
    },
    { once: true },
  );
  const h = await headed;
  if (h.status === 503 && !h.headers['content-type']) return error(503, 'The page holding the engine was closed before it answered: open it again and retry.', 'service_unavailable', 'no_engine');
  return new Response(stream, { status: h.status, headers: h.headers });
}

/**
 * The first window client that says it holds an engine (serveOpenAI's, or a tab's attached to the shared engine), asked
 * all at once. Each page answers a ping once, however many engines it serves (its one dispatcher, in 'intab').
 */
async function findEnginePage(clients: RelayClients, timeoutMs: number): Promise<{ id: string; postMessage(message: unknown, transfer: Transferable[]): void } | undefined> {
  const all = await clients.matchAll({ type: 'window', includeUncontrolled: true });
  if (all.length === 0) return undefined;
  return new Promise((resolve) => {
    let pending = all.length;
    const timer = setTimeout(() => resolve(undefined), timeoutMs);
    for (const c of all) {
      const { port1, port2 } = new MessageChannel();
      port1.onmessage = (e: MessageEvent) => {
        port1.close();
        if ((e.data as { type?: string })?.type !== 'intab:pong') return;
        clearTimeout(timer);
        resolve(c);
      };
      try {
        c.postMessage({ type: 'intab:ping' }, [port2]);
      } catch {
        if (--pending === 0) {
          clearTimeout(timer);
          resolve(undefined);
        }
      }
    }
  });
}
