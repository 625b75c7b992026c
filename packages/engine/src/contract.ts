// The contract between the main thread and the worker: what crosses (requests, chunks, metrics, model
// info) and the API the worker exposes. Both sides import this file and nothing else of each other's.
// Everything here is structured-clone safe (plain data); errors cross as the classes in errors.ts.

/** One message of a chat (OpenAI / Hugging Face shape). */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
  content: string;
}

/** Sampling and stopping options of one request (all optional; defaults in brackets). */
export interface GenerationOptions {
  /** Most new tokens [256]. */
  maxTokens?: number;
  /** 0 is greedy [1]. */
  temperature?: number;
  /** 0 = off [0]. */
  topK?: number;
  /** 1 = off [1]. */
  topP?: number;
  /** 0 = off [0]. */
  minP?: number;
  /** 1 = off; llama.cpp semantics [1]. */
  repetitionPenalty?: number;
  /** OpenAI semantics [0]. */
  presencePenalty?: number;
  /** OpenAI semantics [0]. */
  frequencyPenalty?: number;
  /** Token id → bias added to its logit. */
  logitBias?: Record<number, number>;
  /** Seeds the request's own RNG: the same seed gives the same ids, alone or batched. */
  seed?: number;
  /** Stop strings: matched across token boundaries and never emitted. */
  stop?: string[];
  /** Extra stop token ids (the model's EOS ids always stop unless ignoreEos). */
  stopTokenIds?: number[];
  ignoreEos?: boolean;
  /** Return the chosen token's logprob [false]. */
  logprobs?: boolean;
  /** With logprobs: the n most likely alternatives per token, 0..20 [0]. */
  topLogprobs?: number;
}

/** A generation request: exactly one of prompt (text), promptIds or messages (chat template applied). */
export interface GenerateRequest extends GenerationOptions {
  prompt?: string;
  promptIds?: number[];
  messages?: ChatMessage[];
}

export type FinishReason = 'stop' | 'length' | 'abort' | 'error';

export interface TokenLogprob {
  id: number;
  text: string;
  logprob: number;
  top?: { id: number; text: string; logprob: number }[];
}

/** Per-request figures, on the last chunk. */
export interface RequestMetrics {
  /** From generate() to the first step that included the request. */
  queueMs: number;
  /** From generate() to the first token. */
  ttftMs: number;
  promptTokens: number;
  completionTokens: number;
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
  /** Time the sequence spent paused because its consumer did not pull. */
  pausedMs: number;
}

/** What one pull returns: everything produced since the last pull, coalesced. */
export interface Chunk {
  /** New text (never a broken UTF-8 character, never part of a stop string). */
  text: string;
  /** New token ids. */
  ids: number[];
  logprobs?: TokenLogprob[];
  /** Set on the last chunk only. */
  finishReason: FinishReason | null;
  /** On the last chunk. */
  metrics?: RequestMetrics;
}

/** Where the model comes from, as the worker can read it. */
export type ModelSource =
  | { kind: 'url'; url: string }
  | { kind: 'hf-urls'; files: Record<string, string> }
  | { kind: 'files'; files: { name: string; blob: Blob }[] };

export interface LoadOptions {
  quantize?: 'q8_0' | 'q4_0';
  /** KV-cache bytes [128 MiB]. */
  kvBudgetBytes?: number;
  /** Most sequences per step [8]. */
  maxBatch?: number;
  /** Most tokens per step (prefill chunks are cut to fit) [256]. */
  maxTokensPerStep?: number;
  /** Chunks a sequence may have queued before it is paused [8]. */
  maxQueuedChunks?: number;
}

export interface ModelInfo {
  arch: string;
  layers: number;
  hidden: number;
  vocab: number;
  contextLength: number;
  hasTokenizer: boolean;
  hasChatTemplate: boolean;
  weightBytes: number;
  kvPages: number;
  adapter: string;
}

export interface LoadProgress {
  loaded: number;
  total: number;
}

/**
 * The worker's API. Streams are pull-based: start() registers a request and returns its id; each next()
 * resolves with everything produced since the previous pull (waiting if nothing is ready), and the stream
 * is over after a chunk with a finishReason. Aborting the signal given to start() ends the stream with
 * finishReason 'abort' once the sequence's pages are freed.
 */
export interface EngineApi {
  load(source: ModelSource, options: LoadOptions, onProgress?: (p: LoadProgress) => void): Promise<ModelInfo>;
  start(request: GenerateRequest, signal?: AbortSignal): Promise<number>;
  next(stream: number): Promise<Chunk>;
  /** Cancel a stream (what `break` out of for-await does); resolves when its pages are freed. */
  cancel(stream: number): Promise<void>;
  /** Free every GPU resource; the engine cannot be used afterwards. */
  destroy(): Promise<void>;
}
