// Types of serve.mjs for the TypeScript tests (and the remote backend's tests, which run against startServer).
import type { RateLimit } from './serve-limits.mjs';

export interface ServeOptions {
  /** A GGUF file, a Hugging Face folder or a URL (as intab generate takes). */
  model: string;
  /** [127.0.0.1] */
  host?: string;
  /** [8080; 0 picks a free port] */
  port?: number;
  /** The model name /v1/models lists and answers carry [the file's name]. */
  name?: string;
  /** Keys that may call (Authorization: Bearer KEY), each with its own rate limit or the server's. None: no auth. */
  apiKeys?: (string | { key: string; rateLimit?: RateLimit })[];
  /** Per key (per client address without keys). */
  rateLimit?: RateLimit;
  /** HTTPS with HTTP/2 and HTTP/1.1 (ALPN); without it, plaintext HTTP/1.1 and h2c on the one port. */
  tls?: { cert: string | Buffer; key: string | Buffer };
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
  headed?: boolean;
  loadTimeoutMs?: number;
  /** Where progress, warnings and access lines go [stderr]. */
  log?: (line: string) => void;
  /** One log line per completion request [false]. */
  accessLog?: boolean;
}

/** The engine's own figures (streams, pages, prefix cache), as the page's engine.stats() gives them. */
export type { EngineStats } from '@intab/engine/contract';
import type { EngineStats } from '@intab/engine/contract';

export interface ServerStats {
  object: 'intab.stats';
  model: string;
  status: 'ok' | 'draining' | 'engine_down';
  uptime_s: number;
  engine: EngineStats | null;
  admission: { in_flight: number; slots: number; max_queue: number };
  requests: {
    id: number;
    endpoint: 'chat' | 'completions';
    transport: 'http/1.1' | 'h2' | 'ws';
    key: string;
    state: 'starting' | 'running';
    age_ms: number;
    completion_tokens: number;
    writes: number;
    blocked: boolean;
    blocked_ms: number;
  }[];
  totals: Record<string, number>;
}

export interface RunningServer {
  /** http(s)://host:port (no trailing slash; the OpenAI base URL is url + '/v1'). */
  url: string;
  /** ws(s)://host:port/v1/realtime-text */
  wsUrl: string;
  host: string;
  port: number;
  model: string;
  /** The engine's ModelInfo (backend, adapter, contextLength, ...). */
  info: Record<string, any>;
  /** Stops accepting, lets running streams finish for graceMs, aborts the rest, closes the browser. Idempotent. */
  close(o?: { graceMs?: number }): Promise<void>;
  closed: Promise<void>;
  engineStats(): Promise<EngineStats>;
  stats(): Promise<ServerStats>;
}

export declare function startServer(options: ServeOptions): Promise<RunningServer>;
export declare function serveOptions(flags: Record<string, string | boolean>, apiKeys?: string[]): ServeOptions;
export declare const CHATML: string;
export declare function serve(flags: Record<string, string | boolean>, argv: string[]): Promise<number>;
