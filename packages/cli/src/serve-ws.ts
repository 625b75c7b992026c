// `intab serve`'s WebSocket, /v1/realtime-text: one socket carries several streamed completions at once, each named by
// an id the client picks, each cancellable. JSON text frames:
//   client → server
//     {"type":"request","id":"a1","endpoint":"chat.completions"|"completions","body":{...}}
//         body is the OpenAI request of that endpoint ("chat.completions", the default, or "completions"); the answer
//         always streams (body.stream is ignored). An id may be reused once its request is over.
//     {"type":"cancel","id":"a1"}
//   server → client
//     {"type":"chunk","id":"a1","data":{...}}          a chat.completion.chunk, or a streamed text_completion
//     {"type":"done","id":"a1","finish_reason":"stop"|"length"|"tool_calls","usage":{prompt_tokens,completion_tokens,total_tokens}}
//         (a chat body with tools streams its calls as the chunks' delta.tool_calls, as over HTTP)
//     {"type":"cancelled","id":"a1"}                   after a cancel, once the request's KV pages are freed
//     {"type":"error","id":"a1"|null,"status":429,"error":{message,type,param,code},"retry_after_ms"?:N}
//         the request is over (its HTTP status says why, as the HTTP endpoints would answer); id null: a frame that
//         could not be read.
// Authentication (when the server has API keys): an Authorization: Bearer header on the upgrade request, or (from a
// browser, which cannot set headers) the subprotocols ["intab-realtime-text", "openai-insecure-api-key.KEY"]. Rate
// limits and the admission queue apply per request, as over HTTP. Each request is answered by intab's one OpenAI core
// (answerCompletion, always streamed): every object it gives is a chunk frame, its tally fills the done frame, and
// what ends it otherwise becomes an error frame (errorResponse), as HTTP would answer it. Backpressure: the next object
// is pulled from the core (and the engine) only once the last frame was sent, and a frame is sent at once only while
// the socket's buffer is under WS_HIGH_WATER bytes; above it, the request waits until the socket took it.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { answerCompletion, errorResponse, isErrorReply, type OpenAIEndpoint } from 'intab';
import { authorize, blockedOn, countRequest, errorBody, requestScope, shuttingDown, type Client, type ServeContext } from './serve-core.ts';

export const REALTIME_PATH = '/v1/realtime-text';
const KEY_PROTOCOL = 'openai-insecure-api-key.';
const PROTOCOL = 'intab-realtime-text';
/** Bytes a socket may have queued before a request waits for it to drain. */
export const WS_HIGH_WATER = 64 << 10;
/** Requests one socket may have in flight. */
const MAX_PER_SOCKET = 256;
/** A socket that does not answer a ping within this long is dropped (its requests aborted). */
const HEARTBEAT_MS = 30_000;

/** A client's socket, with its requests in flight by id. */
type Socket = WebSocket & { intab?: { client: Client; requests: Map<string | number, AbortController>; alive: boolean } };

/** A frame from the client, as far as it could be read. */
type Frame = { type?: unknown; id?: unknown; endpoint?: unknown; body?: unknown } | null;

/**
 * The WebSocket endpoint: `upgrade(req, socket, head)` takes the HTTP upgrade requests of every server (HTTP/1.1, h2c
 * and TLS alike); `closeAll()` ends every socket (shutdown, after their requests); `sockets` are the open ones.
 */
export function createRealtime(ctx: ServeContext) {
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: ctx.maxBodyBytes,
    handleProtocols: (protocols) => (protocols.has(PROTOCOL) ? PROTOCOL : false),
  });
  const sockets = new Set<Socket>();
  // A peer that vanished without a close (a dead network path) is found by its missing pong.
  const heartbeat = setInterval(() => {
    for (const ws of sockets) {
      if (ws.intab && !ws.intab.alive) ws.terminate();
      else if (ws.intab) {
        ws.intab.alive = false;
        ws.ping();
      }
    }
  }, HEARTBEAT_MS);
  heartbeat.unref();

  function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const refuse = (status: number, text: string, body: object) => {
      const json = JSON.stringify(body);
      socket.end(`HTTP/1.1 ${status} ${text}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(json)}\r\nconnection: close\r\n\r\n${json}`);
    };
    if (path !== REALTIME_PATH) return refuse(404, 'Not Found', errorBody(`No WebSocket at ${path}: connect to ${REALTIME_PATH}.`, 'invalid_request_error', 'unknown_url'));
    if (ctx.closing) return refuse(503, 'Service Unavailable', shuttingDown().body);
    const auth = req.headers.authorization;
    const fromHeader = typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1] : undefined;
    const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((s) => s.trim());
    const fromProtocol = offered.find((p) => p.startsWith(KEY_PROTOCOL))?.slice(KEY_PROTOCOL.length);
    const who = authorize(ctx, fromHeader ?? fromProtocol, req.socket.remoteAddress);
    if (!who.ok) return refuse(401, 'Unauthorized', who.reply.body);
    wss.handleUpgrade(req, socket, head, (ws) => {
      const s = ws as Socket;
      s.intab = { client: who.client, requests: new Map(), alive: true };
      s.setMaxListeners(MAX_PER_SOCKET + 16); // a 'close' listener per request waiting for the socket to drain
      sockets.add(s);
      s.on('pong', () => s.intab && (s.intab.alive = true));
      s.on('close', () => {
        sockets.delete(s);
        for (const c of s.intab?.requests.values() ?? []) c.abort(new Error('the client went away'));
      });
      s.on('message', (data, binary) => onMessage(s, binary ? null : String(data)));
    });
  }

  function send(ws: Socket, m: Record<string, unknown>): void {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(m));
  }

  function onMessage(ws: Socket, text: string | null): void {
    const state = ws.intab!;
    let m: Frame;
    try {
      m = text === null ? null : JSON.parse(text);
    } catch {
      m = null;
    }
    const badFrame = (why: string, id: unknown = null) => send(ws, { type: 'error', id, status: 400, error: errorBody(why, 'invalid_request_error').error });
    if (typeof m !== 'object' || m === null) return badFrame('A frame must be a JSON object: {"type":"request","id":...,"body":{...}} or {"type":"cancel","id":...}.');
    const id = m.id;
    if (typeof id !== 'string' && typeof id !== 'number') return badFrame('Every frame needs an "id" (a string or a number) that names its request.');
    if (m.type === 'cancel') {
      state.requests.get(id)?.abort(new Error('cancelled by the client'));
      return;
    }
    if (m.type !== 'request') return badFrame(`Unknown frame type ${JSON.stringify(m.type)}: "request" or "cancel".`, id);
    if (state.requests.has(id)) return badFrame(`Request ${JSON.stringify(id)} is still running: pick another id.`, id);
    if (state.requests.size >= MAX_PER_SOCKET) return badFrame(`At most ${MAX_PER_SOCKET} requests run at once on one socket.`, id);
    const endpoint = m.endpoint === undefined || m.endpoint === 'chat.completions' ? 'chat' : m.endpoint === 'completions' ? 'completions' : null;
    if (!endpoint) return badFrame(`Unknown endpoint ${JSON.stringify(m.endpoint)}: "chat.completions" or "completions".`, id);
    const cancel = new AbortController();
    state.requests.set(id, cancel);
    void run(ws, id, endpoint, m.body, state.client, cancel).finally(() => {
      state.requests.delete(id);
      // While the server drains, a socket closes once its last request is over.
      if (ctx.closing && state.requests.size === 0) ws.close(1001, 'server shutting down');
    });
  }

  /** Sends an error frame: the request is over, its HTTP status says why. */
  function fail(ws: Socket, id: string | number, reply: { status: number; body: { error: unknown }; headers?: Record<string, string> }): void {
    const h = reply.headers ?? {};
    const retry = h['retry-after-ms'] ?? (h['retry-after'] ? String(Number(h['retry-after']) * 1000) : undefined);
    send(ws, { type: 'error', id, status: reply.status, error: reply.body.error, ...(retry ? { retry_after_ms: Number(retry) } : {}) });
  }

  /** Sends a chunk frame; resolves at once while the socket keeps up, else once the socket took it (or the request ended). */
  function sendChunk(ws: Socket, id: string | number, data: unknown, signal: AbortSignal): Promise<void> | undefined {
    if (ws.readyState !== ws.OPEN || signal.aborted) return;
    const frame = JSON.stringify({ type: 'chunk', id, data });
    if (ws.bufferedAmount < WS_HIGH_WATER) return void ws.send(frame);
    // The socket is backed up: this frame goes out, then the request waits until it was written (or the end).
    return new Promise<void>((resolve) => {
      const done = () => {
        signal.removeEventListener('abort', done);
        ws.off('close', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      ws.once('close', done);
      ws.send(frame, done);
    });
  }

  /** One request on a socket, answered by the core; `cancel` is aborted by a cancel frame, the socket's close or the shutdown. */
  async function run(ws: Socket, id: string | number, endpoint: OpenAIEndpoint, body: unknown, client: Client, cancel: AbortController): Promise<void> {
    const scope = requestScope(ctx, client, 'ws', cancel);
    const { signal } = cancel;
    let answer: Awaited<ReturnType<typeof answerCompletion>>;
    try {
      answer = await answerCompletion(ctx.engine, endpoint, body, { stream: true, admit: scope.admit, signal });
    } catch {
      // Aborted before there was an answer (a cancel frame, or the socket closed).
      if (ws.readyState === ws.OPEN) send(ws, { type: 'cancelled', id });
      return;
    }
    countRequest(ctx, scope, answer.status);
    if (answer.kind === 'error') return fail(ws, id, answer);
    const entry = scope.entry();
    if (entry) entry.state = 'running';
    if (answer.kind === 'object') {
      // Not with stream: true; a whole answer would still be one chunk and done.
      send(ws, { type: 'chunk', id, data: answer.object });
    } else {
      try {
        for (let next = await answer.objects.next(); !next.done; next = await answer.objects.next()) {
          if (entry) entry.writes++;
          const taken = sendChunk(ws, id, next.value, signal);
          if (taken) await blockedOn(entry, taken);
          if (signal.aborted) throw signal.reason;
        }
      } catch (err) {
        await answer.objects.return();
        if (isErrorReply(signal.reason)) return fail(ws, id, signal.reason); // the shutdown, past its grace period
        if (signal.aborted) {
          // A cancel frame: its KV pages are free now. (A closed socket hears nothing.)
          if (ws.readyState === ws.OPEN) send(ws, { type: 'cancelled', id });
          return;
        }
        return fail(ws, id, errorResponse(err, endpoint));
      }
    }
    const t = answer.tally;
    send(ws, { type: 'done', id, finish_reason: t.finishReason, usage: { prompt_tokens: t.promptTokens, completion_tokens: t.completionTokens, total_tokens: t.promptTokens + t.completionTokens } });
  }

  return {
    upgrade,
    sockets,
    /** Closes every socket with no request left (the others close after their last one); `force` closes them all. */
    closeAll(force = false): void {
      if (force) clearInterval(heartbeat);
      for (const ws of sockets) {
        if (force) ws.terminate();
        else if ((ws.intab?.requests.size ?? 0) === 0) ws.close(1001, 'server shutting down');
      }
    },
  };
}
