// `intab serve`: an OpenAI-compatible HTTP server in Node over one engine that every request shares (its continuous
// batching): in this process by default (--runtime node: Dawn or onnxruntime-node, ../node/serve-engine.ts), or in
// headless Chromium (--runtime chromium: serve-bridge.ts). This file wires the parts and owns the lifecycle:
//   listeners   plaintext: one port for HTTP/1.1 and prior-knowledge HTTP/2 (h2c): a net server reads the first
//               bytes of each connection and hands it to node:http or node:http2 (http2.createServer speaks no
//               HTTP/1.1); TLS (--cert/--key): http2.createSecureServer with allowHTTP1 (ALPN picks). WebSocket
//               upgrades (serve-ws.ts) reach both.
//   requests    intab's one OpenAI core answers them (handleOpenAI, answerCompletion); serve-http.ts and serve-ws.ts
//               carry them, serve-core.ts adds what a server adds (auth, rate limits, admission, /v1/stats),
//               serve-limits.ts holds the token buckets and the bounded queue.
//   shutdown    close() (and SIGINT/SIGTERM from the CLI): stop accepting (HTTP/2 sessions get a GOAWAY, HTTP/1.1
//               connections close after their response, queued requests get 503), let running streams finish for
//               the grace period, then abort them (their clients get an error event), close the engine.
// startServer() is the programmatic API (the tests, intab bench serve).
import { readFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { basename } from 'node:path';
import type { EngineStats } from '@intab/engine/contract';
import { wholeFlag, type Flags } from './args.ts';
import { resolveModel } from './model-files.ts';
import { serverStats, shuttingDown, type ServeContext, type ServerStats } from './serve-core.ts';
import { SERVE_RUNTIMES, startEngine, type ServeEngine, type ServeRuntime } from './serve-engine.ts';
import { createHandler } from './serve-http.ts';
import { AdmissionGate, RateLimiter, parseApiKey, parseRateLimit, type RateLimit } from './serve-limits.ts';
import type { ListeningLine } from './serve-process.ts';
import { createRealtime } from './serve-ws.ts';

export type { ServerStats } from './serve-core.ts';
export type { ServeRuntime } from './serve-engine.ts';
/** The engine's own figures (streams, pages, prefix cache), as the page's engine.stats() gives them. */
export type { EngineStats } from '@intab/engine/contract';

const BACKENDS = ['webgpu', 'auto', 'onnx-wasm', 'onnx-webgpu'];
/** The first bytes of every prior-knowledge HTTP/2 connection. */
const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/** What startServer takes (the flags of `intab serve`, as serveOptions reads them). */
export interface ServeOptions {
  /** A GGUF file, a Hugging Face folder or a URL (as intab generate takes). */
  model: string;
  /** [127.0.0.1] */
  host?: string;
  /** [8080; 0 picks a free port] */
  port?: number;
  /** The model name /v1/models lists and answers carry [the file's name]. */
  name?: string;
  /** Where the engine runs: in this process (Dawn, else onnxruntime-node) or in headless Chromium ['node']. */
  runtime?: ServeRuntime;
  /** Keys that may call (Authorization: Bearer KEY), each with its own rate limit or the server's. None: no auth. */
  apiKeys?: (string | { key: string; rateLimit?: RateLimit })[];
  /** Per key (per client address without keys). */
  rateLimit?: RateLimit;
  /** HTTPS with HTTP/2 and HTTP/1.1 (ALPN); without it, plaintext HTTP/1.1 and h2c on the one port. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** What runs the model ['auto' on runtime node: the browser's rule; 'webgpu' on chromium, intab's kernels]. */
  backend?: 'webgpu' | 'auto' | 'onnx-wasm' | 'onnx-webgpu';
  quantize?: 'q8_0' | 'q4_0';
  /** Sequences per engine step [16]. */
  maxBatch?: number;
  /** Requests that may wait beyond maxBatch; past maxBatch + maxQueue in flight, 503 [64]. */
  maxQueue?: number;
  /** Chunks a sequence may queue before the engine pauses it [8]. */
  maxQueuedChunks?: number;
  /** KV-cache MiB [256]. */
  kvBudgetMiB?: number;
  prefixCache?: boolean;
  seed?: number;
  /** A Jinja chat template (for a model that ships none, or to replace its own). */
  chatTemplate?: string;
  /** Idle SSE streams get ': keep-alive' this often [15000; 0: never]. */
  keepAliveMs?: number;
  /** How long close() lets running streams finish before aborting them [10000]. */
  graceMs?: number;
  maxBodyBytes?: number;
  /** Access-Control-Allow-Origin to answer with (CORS off without it). */
  cors?: string;
  /** chromium: show the browser window. */
  headed?: boolean;
  /** node: Dawn's backend ['auto': Vulkan, then OpenGL], the dawn.node to load, an adapter's name. */
  dawnBackend?: string;
  dawnPath?: string;
  adapter?: string;
  /** node: onnxruntime-node's threads per session [one per core, at most 4]. */
  threads?: number;
  loadTimeoutMs?: number;
  /** Where progress, warnings and access lines go [stderr]. */
  log?: (line: string) => void;
  /** One log line per completion request [false]. */
  accessLog?: boolean;
}

/** A server startServer started. */
export interface RunningServer {
  /** http(s)://host:port (no trailing slash; the OpenAI base URL is url + '/v1'). */
  url: string;
  /** ws(s)://host:port/v1/realtime-text */
  wsUrl: string;
  host: string;
  port: number;
  model: string;
  /** Where the engine runs. */
  runtime: ServeRuntime;
  /** The engine's ModelInfo (backend and why, adapter, contextLength, ...). */
  info: ServeEngine['info'];
  /** Milliseconds from startServer() to listening (the model loaded, its kernels warmed up). */
  readyMs: number;
  /** Stops accepting, lets running streams finish for graceMs, aborts the rest, closes the engine. Idempotent. */
  close(o?: { graceMs?: number }): Promise<void>;
  closed: Promise<void>;
  engineStats(): Promise<EngineStats>;
  stats(): Promise<ServerStats>;
}

/**
 * Starts `intab serve` in this process: loads the model (in this process, or in headless Chromium) and listens.
 * @example
 * const server = await startServer({ model: 'stories260K-vocab-ud.gguf', port: 0, chatTemplate });
 * const r = await fetch(`${server.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ messages }) });
 * await server.close();
 */
export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const t0 = performance.now();
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const runtime = options.runtime ?? 'node';
  if (!SERVE_RUNTIMES.includes(runtime)) throw new Error(`--runtime takes ${SERVE_RUNTIMES.join(' or ')}`);
  const model = resolveModel(options.model);
  const backend = options.backend ?? (runtime === 'node' ? 'auto' : 'webgpu');
  if (!BACKENDS.includes(backend)) throw new Error(`--backend takes ${BACKENDS.join(', ')}`);
  const maxBatch = options.maxBatch ?? 16;
  const engine = await startEngine(runtime, {
    model,
    name: options.name ?? basename(options.model).replace(/\.gguf$/i, '').replace(/\/+$/, ''),
    backend,
    quantize: options.quantize,
    maxBatch,
    kvBudgetBytes: (options.kvBudgetMiB ?? 256) << 20,
    maxQueuedChunks: options.maxQueuedChunks ?? 8,
    prefixCache: options.prefixCache ?? true,
    seed: options.seed ?? 0,
    chatTemplate: options.chatTemplate,
    headed: options.headed,
    dawnBackend: options.dawnBackend,
    dawnPath: options.dawnPath,
    adapter: options.adapter,
    threads: options.threads,
    loadTimeoutMs: options.loadTimeoutMs ?? 300_000,
    log,
  });

  const apiKeys = options.apiKeys?.length ? new Map(options.apiKeys.map((k) => (typeof k === 'string' ? [k, {}] : [k.key, { rateLimit: k.rateLimit }]))) : null;
  const ctx: ServeContext = {
    engine,
    apiKeys,
    rateLimit: options.rateLimit,
    limiter: new RateLimiter(),
    gate: new AdmissionGate({ slots: maxBatch, maxQueue: options.maxQueue ?? 64 }),
    keepAliveMs: options.keepAliveMs ?? 15_000,
    maxBodyBytes: options.maxBodyBytes ?? 4 << 20,
    cors: options.cors,
    active: new Map(),
    nextId: 0,
    totals: { requests: 0, completed: 0, errors: 0, aborted: 0, shutdown_aborted: 0, invalid: 0, refused_429: 0, refused_503: 0 },
    closing: false,
    startedAt: Date.now(),
    onIdle: [],
    log,
    accessLog: options.accessLog ?? false,
  };

  const handler = createHandler(ctx);
  const realtime = createRealtime(ctx);
  const sessions = new Set<http2.ServerHttp2Session>();
  const track = (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
    // A client that goes away mid-session must not take the process down.
    s.on('error', () => {});
  };
  let listener: net.Server | http2.Http2SecureServer;
  /** Plaintext connections whose first bytes have not come yet (not node:http's or node:http2's to close). */
  const sniffing = new Set<net.Socket>();
  let h1: http.Server | undefined;
  if (options.tls) {
    const secure = http2.createSecureServer({ cert: options.tls.cert, key: options.tls.key, allowHTTP1: true }, handler);
    secure.on('session', track);
    secure.on('upgrade', realtime.upgrade);
    listener = secure;
  } else {
    h1 = http.createServer(handler);
    h1.on('upgrade', realtime.upgrade);
    const h2 = http2.createServer(handler);
    h2.on('session', track);
    const plain = h1;
    // One port for both: the connection's first bytes say which (an HTTP/2 client without TLS sends the preface).
    listener = net.createServer({ noDelay: true }, (socket) => {
      let seen = Buffer.alloc(0);
      sniffing.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sniffing.delete(socket));
      // A connection that says nothing is not kept (node:http's and node:http2's own timeouts start after this).
      socket.setTimeout(60_000, () => socket.destroy());
      const sniff = (data: Buffer) => {
        seen = Buffer.concat([seen, data]);
        const n = Math.min(seen.length, H2_PREFACE.length);
        const isH2 = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
        if (isH2 && seen.length < H2_PREFACE.length) return;
        socket.off('data', sniff);
        socket.setTimeout(0);
        sniffing.delete(socket);
        socket.pause();
        socket.unshift(seen);
        // node:http2 reads what is buffered on the socket itself; node:http resumes it.
        if (isH2) h2.emit('connection', socket);
        else {
          plain.emit('connection', socket);
          socket.resume();
        }
      };
      socket.on('data', sniff);
    });
  }
  const host = options.host ?? '127.0.0.1';
  try {
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(options.port ?? 8080, host, () => resolve());
    });
  } catch (err) {
    await engine.close(); // the port is taken (say): the engine (and a browser) must not outlive the failed start
    throw err;
  }
  const port = (listener.address() as net.AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const scheme = options.tls ? 'https' : 'http';

  let closing: Promise<void> | undefined;
  let onClosed = () => {};
  const closed = new Promise<void>((resolve) => (onClosed = resolve));
  const close = (o: { graceMs?: number } = {}) =>
    (closing ??= (async () => {
      const graceMs = o.graceMs ?? options.graceMs ?? 10_000;
      ctx.closing = true;
      const stopped = new Promise<void>((resolve) => listener.close(() => resolve()));
      h1?.closeIdleConnections();
      for (const s of sessions) s.close(); // GOAWAY: running streams go on, no new ones
      realtime.closeAll();
      if (ctx.active.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([new Promise<void>((resolve) => ctx.onIdle.push(() => resolve())), new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
        clearTimeout(timer);
        // Each gets the shutdown's reply (mid-stream: an error event), then its stream ends.
        for (const a of ctx.active.values()) a.controller.abort(shuttingDown());
        // Aborted requests end in the engine's next step; then their responses are closed.
        if (ctx.active.size > 0) await Promise.race([new Promise<void>((resolve) => ctx.onIdle.push(() => resolve())), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
      }
      realtime.closeAll(true);
      for (const socket of sniffing) socket.destroy();
      h1?.closeAllConnections();
      for (const s of sessions) s.destroy();
      await stopped;
      await engine.close();
      onClosed();
    })());
  // The engine died (its page crashed, its GPU device was lost for good): nothing can be served any more.
  void engine.died.then((e) => {
    if (!ctx.closing) log(`intab serve: ${e.message}; /health answers 503 until it is restarted`);
  });

  return {
    url: `${scheme}://${shown}:${port}`,
    wsUrl: `${options.tls ? 'wss' : 'ws'}://${shown}:${port}/v1/realtime-text`,
    host,
    port,
    model: engine.model,
    runtime,
    info: engine.info,
    readyMs: Math.round(performance.now() - t0),
    close,
    closed,
    engineStats: () => engine.stats(),
    stats: () => serverStats(ctx),
  };
}

// ---- the command ----

/**
 * startServer's options from the flags of `intab serve` (checked before anything starts). `apiKeys`: every --api-key
 * given (parseArgs keeps the last of a repeated flag).
 */
export function serveOptions(flags: Flags, apiKeys: string[] = []): ServeOptions {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder | URL> is required');
  const str = (name: string) => {
    const v = flags[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw new Error(`--${name} needs a value`);
    return v;
  };
  const runtime = runtimeOf(flags.runtime, 'node');
  const backend = str('backend') ?? (runtime === 'node' ? 'auto' : 'webgpu');
  if (!BACKENDS.includes(backend)) throw new Error(`--backend takes ${BACKENDS.join(', ')}`);
  for (const f of ['dawn-backend', 'dawn', 'adapter', 'threads']) {
    if (runtime !== 'node' && flags[f] !== undefined) throw new Error(`--${f} goes with --runtime node (the engine in this process); headless Chromium picks its own adapter`);
  }
  if (runtime !== 'chromium' && flags.headed !== undefined) throw new Error('--headed shows the browser of --runtime chromium; --runtime node has none');
  const quantize = str('quantize');
  if (quantize !== undefined && quantize !== 'q8_0' && quantize !== 'q4_0') throw new Error('--quantize takes q8_0 or q4_0');
  const cert = str('cert');
  const key = str('key');
  if ((cert === undefined) !== (key === undefined)) throw new Error('--cert and --key go together: the PEM certificate and its private key, for HTTPS (HTTP/2 and HTTP/1.1)');
  const read = (path: string, flag: string) => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`--${flag} ${path}: cannot read it (${(err as Error).message})`);
    }
  };
  const template = str('chat-template');
  return {
    model: flags.model,
    runtime,
    host: str('host') ?? '127.0.0.1',
    port: wholeFlag(flags, 'port', 8080, 0, 65535),
    name: str('name'),
    apiKeys: apiKeys.map((k) => parseApiKey(k)),
    rateLimit: flags['rate-limit'] === undefined ? undefined : parseRateLimit(String(flags['rate-limit'])),
    ...(cert !== undefined && key !== undefined ? { tls: { cert: read(cert, 'cert'), key: read(key, 'key') } } : {}),
    backend: backend as ServeOptions['backend'],
    ...(quantize ? { quantize: quantize as 'q8_0' | 'q4_0' } : {}),
    maxBatch: wholeFlag(flags, 'max-batch', 16, 1, 256),
    maxQueue: wholeFlag(flags, 'max-queue', 64, 0, 100_000),
    maxQueuedChunks: wholeFlag(flags, 'max-queued-chunks', 8, 1, 1024),
    kvBudgetMiB: wholeFlag(flags, 'kv-mib', 256, 1, 1 << 16),
    prefixCache: flags['no-prefix-cache'] === undefined,
    seed: wholeFlag(flags, 'seed', 0, 0, 2 ** 32 - 1),
    ...(template !== undefined ? { chatTemplate: template === 'chatml' ? CHATML : read(template, 'chat-template').toString('utf8') } : {}),
    keepAliveMs: wholeFlag(flags, 'keep-alive-ms', 15_000, 0, 3_600_000),
    graceMs: wholeFlag(flags, 'grace-ms', 10_000, 0, 3_600_000),
    cors: str('cors'),
    headed: Boolean(flags.headed),
    dawnBackend: str('dawn-backend') ?? process.env.INTAB_DAWN_BACKEND,
    dawnPath: str('dawn') ?? (process.env.INTAB_DAWN || undefined),
    adapter: str('adapter'),
    ...(flags.threads !== undefined ? { threads: wholeFlag(flags, 'threads', 1, 1, 256) } : {}),
    loadTimeoutMs: wholeFlag(flags, 'timeout', 300, 1, 86_400) * 1000,
  };
}

/**
 * The runtime a --runtime flag names: 'node' (this process) or 'chromium' ('browser', its older name, is taken too);
 * `fallback` when absent.
 */
export function runtimeOf(flag: unknown, fallback: ServeRuntime): ServeRuntime {
  if (flag === undefined) return fallback;
  if (flag === 'browser') return 'chromium';
  if (flag === 'node' || flag === 'chromium') return flag;
  throw new Error(`--runtime takes node (this process: Dawn, else onnxruntime-node) or chromium (headless Chromium's WebGPU); got ${JSON.stringify(flag)}`);
}

/** ChatML, for `--chat-template chatml` (a model that ships none). */
export const CHATML =
  "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** `intab serve`: runs until SIGINT or SIGTERM, then shuts down gracefully. `argv`: every argument (for repeated --api-key). */
export async function serve(flags: Flags, argv: string[]): Promise<number> {
  const keys: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--api-key' && i + 1 < argv.length) keys.push(argv[++i]);
    else if (argv[i].startsWith('--api-key=')) keys.push(argv[i].slice('--api-key='.length));
  }
  if (flags['api-key'] === true) throw new Error('--api-key needs a key, e.g. --api-key sk-local-1');
  const options = serveOptions(flags, keys);
  const server = await startServer({ ...options, accessLog: true });
  // ready_ms: from this process's start (Node's performance clock) to listening: the CLI's start, the model's load and
  // warm-up, and on chromium the browser's launch and its page.
  const line: ListeningLine = {
    serve: 'listening',
    url: server.url,
    ws: server.wsUrl,
    model: server.model,
    runtime: server.runtime,
    backend: server.info.backend.name,
    backend_reason: server.info.backend.reason,
    adapter: server.info.adapter,
    api_keys: keys.length,
    ready_ms: Math.round(performance.now()),
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
  let signals = 0;
  const stop = (sig: string) => {
    if (++signals > 1) process.exit(130); // a second Ctrl-C: at once
    process.stderr.write(`intab serve: ${sig}: draining (up to ${(options.graceMs ?? 10_000) / 1000} s; again to quit now)\n`);
    void server.close();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  await server.closed;
  process.off('SIGINT', stop);
  process.off('SIGTERM', stop);
  return 0;
}
