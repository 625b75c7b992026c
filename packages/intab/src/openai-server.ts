// The page's half of the OpenAI-compatible endpoint that a Service Worker serves (intab/service-worker): the Service
// Worker does not hold the model (it is stopped when idle, and WebGPU there is unreliable), so it relays each HTTP
// request over a MessageChannel to a page, and this page answers it with the OpenAI HTTP core (handleOpenAI:
// /v1/chat/completions, /v1/completions, /v1/models, errors, SSE) and streams the answer's bytes back. It is a
// transport and nothing more: a relayed `abort` (the client went away) aborts the request, and the body is pulled:
// the core's next piece (and so the engine's next chunk) is read only for a `pull` from the Service Worker (one per
// piece its response's reader takes), so what nobody has asked for waits in the engine, whose full queue pauses it.
// A page may serve several engines (serveOpenAI calls, and engines attached to the origin's shared engine, which serve
// by themselves): one dispatcher per Service Worker container answers each relayed request with exactly one of them.

import type { OpenAIEngine } from './openai-answer.ts';
import { handleOpenAI, type OpenAIHttpOptions } from './openai-http.ts';
import { openAIError } from './openai-errors.ts';

// The error mapping lived here before the HTTP core had its own file; `intab serve` and tests still import it from here.
export { errorResponse, openAIError, openAiParam } from './openai-errors.ts';

/** A request as the Service Worker relays it. */
export interface RelayedRequest {
  type: 'intab:request';
  method: string;
  /** The path after the origin, e.g. '/v1/chat/completions'. */
  path: string;
  /** The request body as text ('' for GET). */
  body: string;
  /**
   * The Service Worker asks for each body piece of a stream with `{ type: 'pull' }` (intab/service-worker does), and
   * the engine's next chunk is read only then. Absent (a Service Worker of an older intab): pieces go as they come.
   */
  pull?: boolean;
}

/** What the Service Worker sends over the request's port: a credit for one more body piece, or the client went away. */
export type RelayControl = { type: 'pull' } | { type: 'abort' };

/**
 * What the page sends back over the request's port: the head once, body pieces, then the end. The pieces (a JSON
 * answer's one, a stream's events) go one per `pull` when the request asked for pulls, else as they come; the end goes
 * once a read finds the body over.
 */
export type RelayReply =
  | { type: 'head'; status: number; headers: Record<string, string> }
  | { type: 'body'; chunk: string }
  | { type: 'end' };

/**
 * Answers one relayed request with `engine` over `port` (the port's other end is in the Service Worker).
 * Resolves when the answer is complete (or aborted).
 */
export async function answerRelayed(engine: OpenAIEngine, req: RelayedRequest, port: MessagePort, events?: { started?: () => void; ended?: () => void }, options: OpenAIHttpOptions = {}): Promise<void> {
  const send = (m: RelayReply) => port.postMessage(m);
  const controller = new AbortController();
  const credits = pieceCredits(req.pull === true, controller.signal);
  port.onmessage = (e: MessageEvent) => {
    const type = (e.data as Partial<RelayControl> | null)?.type;
    if (type === 'abort') controller.abort(new DOMException('The HTTP client went away.', 'AbortError'));
    else if (type === 'pull') credits.add();
  };
  events?.started?.();
  try {
    const res = await handleOpenAI(engine, { method: req.method, path: req.path, body: req.body, signal: controller.signal }, options);
    send({ type: 'head', status: res.status, headers: res.headers });
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let done = false;
    try {
      // A credit first, then the core's next piece: what is not asked for stays in the engine's queue, where a full
      // queue pauses the sequence.
      while (await credits.take()) {
        const r = await reader.read();
        if (r.done) {
          done = true;
          break;
        }
        send({ type: 'body', chunk: decoder.decode(r.value, { stream: true }) });
      }
    } finally {
      // Left before the end (aborted while the client was not reading, or the body failed): cancel it in the engine.
      if (!done) await reader.cancel().catch(() => {});
    }
  } catch {
    // Aborted (the client went away): nobody is left to read an answer. The core answers every other failure itself.
  } finally {
    send({ type: 'end' });
    port.onmessage = null;
    events?.ended?.();
  }
}

/**
 * The Service Worker's credits for body pieces (`pull` messages): take() resolves true when one may be sent (and uses
 * it up), false once `signal` aborted. Not `pulled` (an older Service Worker sends none): every piece may go.
 */
function pieceCredits(pulled: boolean, signal: AbortSignal): { add(): void; take(): Promise<boolean> } {
  let credits = 0;
  let wake: (() => void) | undefined;
  const rouse = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  signal.addEventListener('abort', rouse, { once: true });
  return {
    add() {
      credits++;
      rouse();
    },
    async take() {
      if (!pulled) return true;
      while (credits === 0 && !signal.aborted) await new Promise<void>((resolve) => (wake = resolve));
      if (signal.aborted) return false;
      credits--;
      return true;
    },
  };
}

export interface ServeOpenAIOptions {
  /** The page's Service Worker container [navigator.serviceWorker]. */
  container?: ServiceWorkerContainer;
  /** Called when a relayed request starts and ends (dashboards). */
  onRequest?: (event: 'start' | 'end') => void;
}

/**
 * Lets this page answer the OpenAI-compatible requests its Service Worker relays (see intab/service-worker):
 * `fetch(location.origin + '/v1/chat/completions', ...)` from any page of the origin, or the official `openai`
 * client with `baseURL: location.origin + '/v1'`, is then answered by `engine` (chat and legacy completions, streamed
 * or not, and the model list, as handleOpenAI answers them). Returns a function that stops it. An engine attached to
 * the origin's shared engine (createEngine's `share: 'origin'`) already answers by itself; calling this too, or for
 * several engines, still answers each request once (see RelayDispatcher).
 * @example
 * const engine = await createEngine({ model });
 * const stop = serveOpenAI(engine);
 * // elsewhere: new OpenAI({ baseURL: location.origin + '/v1', apiKey: 'unused', dangerouslyAllowBrowser: true })
 */
export function serveOpenAI(engine: OpenAIEngine, options: ServeOpenAIOptions = {}): () => void {
  return serveRelayed(engine, { ...options, automatic: false });
}

/**
 * serveOpenAI, or (`automatic`) the serving a shared engine's facade starts by itself: `serving()` says whether it
 * answers now (false while it restarts, once its backend died, or after destroy). Not public: serveOpenAI is.
 */
export function serveRelayed(engine: OpenAIEngine, options: ServeOpenAIOptions & { automatic: boolean; serving?: () => boolean }): () => void {
  const container = options.container ?? (globalThis as { navigator?: Navigator }).navigator?.serviceWorker;
  if (!container) return () => {};
  let dispatcher = dispatchers.get(container);
  if (!dispatcher) dispatchers.set(container, (dispatcher = new RelayDispatcher(container)));
  return dispatcher.add({
    engine,
    // /v1/models' `created`: when this page began to serve the model.
    core: { created: Math.floor(Date.now() / 1000) },
    onRequest: options.onRequest,
    automatic: options.automatic,
    serving: options.serving ?? (() => true),
  });
}

// ---- one dispatcher per Service Worker container ----

/** One engine this page serves to its Service Worker. */
interface Served {
  engine: OpenAIEngine;
  core: OpenAIHttpOptions;
  onRequest?: (event: 'start' | 'end') => void;
  /** Started by a shared engine itself, not by a serveOpenAI call. */
  automatic: boolean;
  serving(): boolean;
}

const dispatchers = new WeakMap<ServiceWorkerContainer, RelayDispatcher>();

/**
 * The one 'message' listener of a page's Service Worker container, however many engines the page serves (serveOpenAI
 * calls, engines attached to a shared engine): a ping is answered when one of them serves, and a request by one of
 * them, so no request is answered twice. The one chosen is the first that serves, in this order: serveOpenAI's before
 * the automatic ones, the most recent first; among them, one whose model the request names (the body's `model`, or
 * the id of GET /v1/models/{id}) goes first. The listener stays once added: a request pinged just before the last
 * engine stopped serving is still answered (a 503 that says no engine serves here), never left waiting.
 */
class RelayDispatcher {
  /** In the order of preference. */
  private readonly served: Served[] = [];

  constructor(container: ServiceWorkerContainer) {
    container.addEventListener('message', (e: MessageEvent) => this.onMessage(e));
    // Messages queued before the page was ready are delivered once this is called (the container's message queue).
    container.startMessages?.();
  }

  add(s: Served): () => void {
    // serveOpenAI's first (the most recent at the front), then the automatic ones (the most recent first among them).
    const at = s.automatic ? this.served.findIndex((o) => o.automatic) : 0;
    this.served.splice(at === -1 ? this.served.length : at, 0, s);
    return () => {
      const i = this.served.indexOf(s);
      if (i !== -1) this.served.splice(i, 1);
    };
  }

  private onMessage(e: MessageEvent): void {
    const data = e.data as { type?: string } | undefined;
    const port = e.ports[0];
    if (!port) return;
    if (data?.type === 'intab:ping') {
      const s = this.pick();
      if (s) port.postMessage({ type: 'intab:pong', model: s.engine.model });
    } else if (data?.type === 'intab:request') {
      const req = data as RelayedRequest;
      const s = this.pick(req);
      if (!s) return noEngine(port);
      void answerRelayed(s.engine, req, port, { started: () => s.onRequest?.('start'), ended: () => s.onRequest?.('end') }, s.core);
    }
  }

  /** The engine that answers `req` (or a ping), if one serves. */
  private pick(req?: RelayedRequest): Served | undefined {
    const serving = this.served.filter((s) => s.serving());
    if (serving.length < 2 || !req) return serving[0];
    const named = requestedModel(req);
    return serving.find((s) => s.engine.model === named) ?? serving[0];
  }
}

/** The model a relayed request names: its body's `model`, or the id in GET /v1/models/{id}; undefined when none. */
function requestedModel(req: RelayedRequest): string | undefined {
  const path = req.path.split(/[?#]/)[0];
  if (path.startsWith('/v1/models/')) {
    try {
      return decodeURIComponent(path.slice('/v1/models/'.length).replace(/\/+$/, ''));
    } catch {
      return undefined;
    }
  }
  try {
    const model = (JSON.parse(req.body) as { model?: unknown } | null)?.model;
    return typeof model === 'string' ? model : undefined;
  } catch {
    return undefined; // not JSON: the core says so to whichever engine answers
  }
}

/** The answer to a request that arrived when no engine of this page serves any more: a 503 the relay passes on. */
function noEngine(port: MessagePort): void {
  const body = JSON.stringify(openAIError('This page stopped serving its engine before it could answer: retry (another open page may hold one), or open the page that loads the model.', 'service_unavailable', 'no_engine'));
  const replies: RelayReply[] = [{ type: 'head', status: 503, headers: { 'content-type': 'application/json' } }, { type: 'body', chunk: body }, { type: 'end' }];
  for (const m of replies) port.postMessage(m);
}
