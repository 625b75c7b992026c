// The HTTP side of `intab serve`: one request handler for HTTP/1.1 and HTTP/2 (node:http and node:http2's
// compatibility API share req/res). What a server adds comes first: CORS (and its preflights), GET /health (no key
// needed), the API key (401), GET /v1/stats, the body limit (413); then intab's one OpenAI core (handleOpenAI) answers:
// routes, errors, JSON and Server-Sent Events, with this server's admission (serve-core.ts) as its `admit` hook. The
// core's body is pulled: the next piece is read (and the engine's next chunk asked for) only once the socket took the
// last one (`write()` → 'drain', or the HTTP/2 stream's flow control), so a slow reader's sequence pauses in the engine;
// an idle stream gets `: keep-alive` comments between reads. A client that goes away aborts its request (its pages are
// freed); the shutdown aborts it with its reply, which the core tells the client (mid-stream: an error event).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { handleOpenAI } from 'intab';
import { SERVER_ROUTES, authorize, blockedOn, countRequest, errorBody, requestScope, serverStats, type ServeContext } from './serve-core.ts';

/** A request of either server (node:http and node:http2's compatibility API share this much). */
type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

const COMPLETIONS = new Set(['/v1/chat/completions', '/v1/completions']);

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
 * Watches a response from the moment its request arrives: `controller` aborts when the client goes away before the
 * response is finished (the connection or the HTTP/2 stream closed), `closed()` says whether the response is closed.
 */
function watch(res: Res): { controller: AbortController; closed: () => boolean } {
  const controller = new AbortController();
  let closed = false;
  res.on('close', () => {
    closed = true;
    // Not writableFinished: an HTTP/2 stream reset before its response began reports itself finished.
    if (!res.writableEnded) controller.abort(new Error('the client went away'));
  });
  return { controller, closed: () => closed };
}

/** Resolves on 'drain', or when the response is closed or the request aborted (at once if it already is). */
function drained(res: Res, watched: ReturnType<typeof watch>): Promise<void> {
  const { signal } = watched.controller;
  return new Promise<void>((resolve) => {
    if (watched.closed() || signal.aborted) return resolve();
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
    signal.addEventListener('abort', done, { once: true });
  });
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
  const url = req.url ?? '/';
  const path = new URL(url, 'http://localhost').pathname.replace(/\/+$/, '') || '/';
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
  const only = (m: string) => {
    if (method === m) return true;
    sendJson(res, 405, errorBody(`Method ${method} is not allowed on ${path}: use ${m}.`, 'invalid_request_error', 'method_not_allowed'), { allow: m });
    return false;
  };
  if (path === '/health') {
    if (!only('GET')) return;
    const status = ctx.closing ? 'draining' : ctx.engine.alive() ? 'ok' : 'engine_down';
    return sendJson(res, status === 'ok' ? 200 : 503, { status, model: ctx.engine.model, runtime: ctx.engine.runtime });
  }
  const auth = authorize(ctx, bearer(req), req.socket?.remoteAddress);
  if (!auth.ok) return sendJson(res, auth.reply.status, auth.reply.body);
  if (path === '/v1/stats') {
    if (!only('GET')) return;
    return sendJson(res, 200, await serverStats(ctx));
  }
  let body: string | undefined;
  if (method === 'POST') {
    try {
      body = await readBody(req, ctx.maxBodyBytes);
    } catch (err) {
      if ((err as { status?: number })?.status === 413) return sendJson(res, 413, errorBody(`The request body is larger than ${ctx.maxBodyBytes} bytes.`, 'invalid_request_error', 'request_too_large'), transport === 'http/1.1' ? { connection: 'close' } : {});
      throw err;
    }
  }
  const scope = requestScope(ctx, auth.client, transport, watched.controller);
  let answer: Awaited<ReturnType<typeof handleOpenAI>>;
  try {
    answer = await handleOpenAI(ctx.engine, { method, path: url, body, signal: watched.controller.signal }, { admit: scope.admit, created: Math.floor(ctx.startedAt / 1000), otherRoutes: SERVER_ROUTES });
  } catch {
    return; // the client went away before there was an answer: nobody is left to read one
  }
  if (method === 'POST' && COMPLETIONS.has(path)) countRequest(ctx, scope, answer.status);
  const entry = scope.entry();
  if (entry) entry.state = 'running';
  const sse = answer.headers['content-type']?.startsWith('text/event-stream') ?? false;
  res.writeHead(answer.status, sse ? { ...answer.headers, 'x-accel-buffering': 'no' } : answer.headers);
  if (sse && 'flushHeaders' in res) res.flushHeaders();
  const reader = answer.body.getReader();
  let keepAlive: NodeJS.Timeout | undefined;
  // An idle stream (a long prefill, a wait for pages) still shows signs of life, so proxies keep it open.
  const beat = () => {
    if (watched.closed() || res.writableEnded) return;
    (res as { write(chunk: string): boolean }).write(': keep-alive\n\n');
    keepAlive = setTimeout(beat, ctx.keepAliveMs);
  };
  try {
    for (;;) {
      if (sse && ctx.keepAliveMs > 0) keepAlive = setTimeout(beat, ctx.keepAliveMs);
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } finally {
        clearTimeout(keepAlive);
      }
      if (next.done) break;
      if (entry) entry.writes++;
      if (watched.closed()) break;
      // The client's socket is full: nothing more is pulled from the engine until it drains (or the client goes).
      if (!(res as { write(chunk: Uint8Array): boolean }).write(next.value)) await blockedOn(entry, drained(res, watched));
    }
  } catch {
    // The body errored: the client went away mid-stream (its request is aborted and its pages freed). Not an answer.
    res.destroy();
    return;
  } finally {
    reader.releaseLock();
  }
  if (watched.closed()) {
    // Left early: the core's stream is cancelled, which ends the engine's request.
    await answer.body.cancel().catch(() => {});
    return;
  }
  res.end();
}
