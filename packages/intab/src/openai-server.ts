// The page's half of the OpenAI-compatible endpoint that a Service Worker serves (intab/service-worker): the Service
// Worker does not hold the model (it is stopped when idle, and WebGPU there is unreliable), so it relays each HTTP
// request over a MessageChannel to a page, and this page answers it with the OpenAI HTTP core (handleOpenAI:
// /v1/chat/completions, /v1/completions, /v1/models, errors, SSE) and streams the answer's bytes back. It is a
// transport and nothing more: a relayed `abort` (the client went away) aborts the request, and the body is pulled:
// the core's next piece (and so the engine's next chunk) is read only for a `pull` from the Service Worker (one per
// piece its response's reader takes), so what nobody has asked for waits in the engine, whose full queue pauses it.

import type { OpenAIEngine } from './openai-answer.ts';
import { handleOpenAI, type OpenAIHttpOptions } from './openai-http.ts';

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
 * or not, and the model list, as handleOpenAI answers them). Returns a function that stops it.
 * @example
 * const engine = await createEngine({ model });
 * const stop = serveOpenAI(engine);
 * // elsewhere: new OpenAI({ baseURL: location.origin + '/v1', apiKey: 'unused', dangerouslyAllowBrowser: true })
 */
export function serveOpenAI(engine: OpenAIEngine, options: ServeOpenAIOptions = {}): () => void {
  const container = options.container ?? (globalThis as { navigator?: Navigator }).navigator?.serviceWorker;
  if (!container) return () => {};
  // /v1/models' `created`: when this page began to serve the model.
  const core: OpenAIHttpOptions = { created: Math.floor(Date.now() / 1000) };
  const onMessage = (e: MessageEvent) => {
    const data = e.data as { type?: string } | undefined;
    const port = e.ports[0];
    if (!port) return;
    if (data?.type === 'intab:ping') port.postMessage({ type: 'intab:pong', model: engine.model });
    else if (data?.type === 'intab:request') {
      void answerRelayed(engine, data as RelayedRequest, port, { started: () => options.onRequest?.('start'), ended: () => options.onRequest?.('end') }, core);
    }
  };
  container.addEventListener('message', onMessage);
  // Messages queued before the page was ready are delivered once this is called (the container's message queue).
  container.startMessages?.();
  return () => container.removeEventListener('message', onMessage);
}
