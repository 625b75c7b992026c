// The HTTP side of `intab serve`: one request handler for HTTP/1.1 and HTTP/2 (node:http and node:http2's
// compatibility API share req/res), its routes, and the sink that writes one request's answer: JSON, or Server-Sent
// Events with keep-alive comments on idle streams. Backpressure: `write` reports whether the socket (or the HTTP/2
// stream, under its flow control) took the event; when it did not, the request waits for 'drain' before its next
// chunk is pulled from the engine. Routes:
//   POST /v1/chat/completions, POST /v1/completions   OpenAI's, streaming (SSE) or not
//   GET  /v1/models, /v1/models/{id}                  the one model served
//   GET  /v1/stats                                    engine stats (pages, paused sequences), queue, requests in flight
//   GET  /health                                      200 {"status":"ok"} (503 while draining or when the engine is gone)
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { authorize, errorBody, runCompletion, serverStats, shuttingDown, type ServeContext, type Sink } from './serve-core.ts';

/** A request of either server (node:http and node:http2's compatibility API share this much). */
type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

function sendJson(res: Res, status: number, object: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  const body = JSON.stringify(object);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** The request body as text, at most `limit` bytes (else a 413 is thrown). */
function readBody(req: Req, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (d: Buffer) => {
      size += d.length;
      if (size > limit) {
        reject(Object.assign(new Error('too large'), { status: 413 }));
        req.removeAllListeners('data');
        req.resume();
      } else parts.push(d);
    });
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

/** The Bearer token of an Authorization header. */
function bearer(req: Req): string | undefined {
  const h = req.headers.authorization;
  const m = typeof h === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
  return m ? m[1] : undefined;
}

/**
 * Watches a response from the moment its request arrives: `gone` aborts when the client goes away before the response
 * is finished (the connection or the HTTP/2 stream closed), `closed()` says whether the response is closed.
 */
function watch(res: Res): { gone: AbortController; closed: () => boolean } {
  const gone = new AbortController();
  let closed = false;
  res.on('close', () => {
    closed = true;
    // Not writableFinished: an HTTP/2 stream reset before its response began reports itself finished.
    if (!res.writableEnded) gone.abort(new Error('the client went away'));
  });
  return { gone, closed: () => closed };
}

/** The sink of one completion answered over HTTP. */
function httpSink(ctx: ServeContext, res: Res, watched: ReturnType<typeof watch>): Sink {
  const { gone } = watched;
  /** One SSE event's text: whether the socket (or the HTTP/2 stream) took it without buffering past its mark. */
  const send = (text: string): boolean => (res as { write(chunk: string): boolean }).write(text);
  let keepAlive: NodeJS.Timeout | undefined;
  let blocked = false;
  const stop = () => clearTimeout(keepAlive);
  /** Resolves on 'drain', or when the response is closed or the request aborted (at once if it already is). */
  const drained = () =>
    new Promise<void>((resolve) => {
      if (watched.closed() || gone.signal.aborted) return resolve();
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        gone.signal.removeEventListener('abort', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
      gone.signal.addEventListener('abort', done, { once: true });
    });
  return {
    signal: gone.signal,
    fail(reply) {
      sendJson(res, reply.status, reply.body, reply.headers);
    },
    start(headers) {
      res.writeHead(200, { ...headers, 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
      if ('flushHeaders' in res) res.flushHeaders();
      if (ctx.keepAliveMs > 0) {
        // An idle stream (a long prefill, a wait for pages) still shows signs of life, so proxies keep it open.
        keepAlive = setTimeout(function beat() {
          if (watched.closed() || res.writableEnded) return;
          if (!blocked) send(': keep-alive\n\n');
          keepAlive?.refresh();
        }, ctx.keepAliveMs);
      }
    },
    write(object) {
      keepAlive?.refresh();
      if (watched.closed() || send(`data: ${JSON.stringify(object)}\n\n`)) return true;
      blocked = true;
      return drained().then(() => void (blocked = false));
    },
    end() {
      stop();
      res.end('data: [DONE]\n\n');
    },
    abort(body) {
      stop();
      if (body && !res.headersSent) return sendJson(res, 503, body, { 'retry-after': '1' });
      // Mid-stream: an error event (as OpenAI-compatible servers send), then the end; a client that went away: nothing.
      if (body && !res.writableEnded) res.end(`data: ${JSON.stringify(body)}\n\n`);
      else if (!res.writableEnded && !watched.closed()) res.destroy();
    },
    json(object, headers) {
      sendJson(res, 200, object, headers);
    },
  };
}

/** The request handler of every HTTP server `intab serve` runs (HTTP/1.1, h2c, TLS with HTTP/2 and HTTP/1.1). */
export function createHandler(ctx: ServeContext): (req: Req, res: Res) => void {
  return (req, res) => {
    handle(ctx, req, res).catch((err) => {
      ctx.log(`error: ${req.method} ${req.url}: ${err?.stack ?? err}`);
      if (!res.headersSent) sendJson(res, 500, errorBody(`The server failed: ${err?.message ?? err}`, 'server_error'));
      else res.destroy();
    });
  };
}

async function handle(ctx: ServeContext, req: Req, res: Res): Promise<void> {
  // From the start: a client may go away while its body is read, or while its request waits.
  const watched = watch(res);
  const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '') || '/';
  const method = req.method ?? 'GET';
  const transport = req.httpVersionMajor === 2 ? 'h2' : 'http/1.1';
  if (ctx.cors) {
    res.setHeader('access-control-allow-origin', ctx.cors);
    // A page's client reads these (a remote backend honours Retry-After; OpenAI's client also reads retry-after-ms).
    res.setHeader('access-control-expose-headers', 'retry-after, retry-after-ms, x-intab-ignored-fields, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests, x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens, x-ratelimit-reset-tokens');
    if (ctx.cors !== '*') res.setHeader('vary', 'origin');
    if (method === 'OPTIONS') {
      res.writeHead(204, { 'access-control-allow-methods': 'GET, POST, OPTIONS', 'access-control-allow-headers': 'authorization, content-type', 'access-control-max-age': '600' });
      return void res.end();
    }
  }
  // HTTP/1.1 connections close after this response while the server drains (HTTP/2 sessions got a GOAWAY).
  if (ctx.closing && transport === 'http/1.1') res.setHeader('connection', 'close');
  const allow = (m: string) => {
    if (method === m) return true;
    sendJson(res, 405, errorBody(`Method ${method} is not allowed on ${path}: use ${m}.`, 'invalid_request_error', 'method_not_allowed'), { allow: m });
    return false;
  };
  if (path === '/health') {
    if (!allow('GET')) return;
    const status = ctx.closing ? 'draining' : ctx.engine.alive() ? 'ok' : 'engine_down';
    return sendJson(res, status === 'ok' ? 200 : 503, { status, model: ctx.model });
  }
  const routes = ['/v1/models', '/v1/stats', '/v1/chat/completions', '/v1/completions'];
  if (!routes.includes(path) && !path.startsWith('/v1/models/')) {
    return sendJson(res, 404, errorBody(`${method} ${path} is not served here: intab serve answers POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /v1/stats, GET /health and the WebSocket /v1/realtime-text.`, 'invalid_request_error', 'unknown_url'));
  }
  const auth = authorize(ctx, bearer(req), req.socket?.remoteAddress);
  if (!auth.ok) return sendJson(res, auth.reply.status, auth.reply.body);
  if (path === '/v1/models' || path.startsWith('/v1/models/')) {
    if (!allow('GET')) return;
    const model = { id: ctx.model, object: 'model', created: Math.floor(ctx.startedAt / 1000), owned_by: 'intab', max_model_len: ctx.contextLength };
    if (path === '/v1/models') return sendJson(res, 200, { object: 'list', data: [model] });
    const id = decodeURIComponent(path.slice('/v1/models/'.length));
    if (id === ctx.model) return sendJson(res, 200, model);
    return sendJson(res, 404, errorBody(`The model '${id}' does not exist: this server serves '${ctx.model}'.`, 'invalid_request_error', 'model_not_found', 'model'));
  }
  if (path === '/v1/stats') {
    if (!allow('GET')) return;
    return sendJson(res, 200, await serverStats(ctx));
  }
  if (!allow('POST')) return;
  if (ctx.closing) {
    const r = shuttingDown();
    return sendJson(res, r.status, r.body, r.headers);
  }
  let text: string;
  try {
    text = await readBody(req, ctx.maxBodyBytes);
  } catch (err) {
    if ((err as { status?: number })?.status === 413) return sendJson(res, 413, errorBody(`The request body is larger than ${ctx.maxBodyBytes} bytes.`, 'invalid_request_error', 'request_too_large'), transport === 'http/1.1' ? { connection: 'close' } : {});
    throw err;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    return sendJson(res, 400, errorBody(`The request body is not JSON (${(err as Error).message}): send the request as application/json.`, 'invalid_request_error'));
  }
  const endpoint = path === '/v1/chat/completions' ? 'chat' : 'completions';
  await runCompletion(ctx, { endpoint, body, client: auth.client, transport }, httpSink(ctx, res, watched));
}
