// The contract between the main thread and the worker: what crosses (requests, chunks, metrics, model
// info) and the API the worker exposes. Both sides import this file and nothing else of each other's.
// Everything here is structured-clone safe (plain data); errors cross as the classes in errors.ts. Past 500 lines as
// one job: it is the one file both sides read, so every type that crosses stays in it, documented where it is declared.

import type { JsonEvent } from '@intab/grammar';

export type { JsonEvent, JsonPath, JsonType, JsonEventKind } from '@intab/grammar';

/**
 * One message of a chat (OpenAI / Hugging Face shape). The role is one of these five (any other is an
 * InvalidRequestError); 'developer' is OpenAI's name of 'system' and reaches the chat template as 'system'.
 */
export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | (string & {});
  /** The text; null (or '') on an assistant message that only calls tools. */
  content: string | null;
  /** An assistant message's tool calls, as the model made them (their arguments a JSON string, OpenAI's shape). */
  toolCalls?: ToolCall[];
  /** A 'tool' message: the id of the call whose result it carries. */
  toolCallId?: string;
  /** A 'tool' message: the function's name (templates that print it take it from here, else from the call's id). */
  name?: string;
}

// ---- tools (function calling) ----

/** A function the model may call (OpenAI's `tools[i].function`). */
export interface ToolFunction {
  /** 1..64 characters of a-z, A-Z, 0-9, '_' and '-' (OpenAI's rule). */
  name: string;
  description?: string;
  /** A JSON Schema of the arguments object [{ type: 'object' }: any object]. */
  parameters?: Record<string, unknown>;
  /**
   * true: the whole schema is enforced, or the request is refused (UnsupportedSchemaError); false (the default):
   * keywords the grammar cannot enforce are dropped, and named in the last chunk's warnings.
   */
  strict?: boolean;
}

/** A tool of a request (OpenAI's shape; functions are the only kind). */
export interface ToolDefinition {
  type: 'function';
  function: ToolFunction;
}

/**
 * Whether and what the model may call ['auto' when tools are given]: 'auto' writes text or calls (the call syntax,
 * once begun, is held to the grammar); 'none' no call can start; 'required' the output is one or more calls from its
 * first token; a named function: a call of that function.
 */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

/** A call the model made (OpenAI's shape): `arguments` is a JSON string that parses and validates under the tool's schema. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * One chunk's part of a call (OpenAI's streamed shape): the first delta of call `index` carries its id, type and name
 * with arguments ''; later ones carry fragments of `arguments`. Joined in order, they give the call.
 */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
  /** The partial-JSON events of this fragment of the arguments (paths from the arguments object), as Chunk.json. */
  json?: JsonEvent[];
}

/**
 * How a model writes tool calls, recognised from its chat template and vocabulary (ModelInfo.toolFormat):
 * 'hermes' `<tool_call>{"name", "arguments"}</tool_call>` (Hermes, Qwen2.5, Qwen3, SmolLM3); 'llama3' a JSON object
 * `{"name", "parameters"}` (after `<|python_tag|>` where the template uses it); 'mistral' `[TOOL_CALLS][{"name",
 * "arguments"}]`; 'phi4' `<|tool_call|>[...]<|/tool_call|>`; 'generic' for templates that know no tools: intab writes
 * the tool list and the reply's syntax into the system message.
 */
export type ToolFormatName = 'hermes' | 'llama3' | 'mistral' | 'phi4' | 'generic';

/** Sampling and stopping options of one request (all optional; defaults in brackets). */
export interface GenerationOptions {
  /**
   * Most new tokens [256]. Clamped to what the context (or the KV-cache) leaves after the prompt: the stream then
   * ends with finishReason 'length' when prompt + generated tokens reach the limit (see strictContext).
   */
  maxTokens?: number;
  /**
   * Refuse, instead of clamping, a maxTokens that the prompt leaves no room for: a given maxTokens with prompt +
   * maxTokens over the model's context length (or what the KV-cache can hold) is a ContextLengthExceededError with
   * reason 'max-tokens' [false]. The default maxTokens is clamped either way; a prompt that alone does not fit is
   * refused either way.
   */
  strictContext?: boolean;
  /** 0 is greedy, at most 100 [1]. */
  temperature?: number;
  /** 0 = off [0]. */
  topK?: number;
  /** 1 = off [1]. */
  topP?: number;
  /** 0 = off [0]. */
  minP?: number;
  /** 1 = off; llama.cpp semantics; 0.01..10 [1]. */
  repetitionPenalty?: number;
  /** OpenAI semantics, -2..2 [0]. */
  presencePenalty?: number;
  /** OpenAI semantics, -2..2 [0]. */
  frequencyPenalty?: number;
  /** Token id → bias added to its logit: -100..100, or -Infinity to ban the token; at most 1024 entries. */
  logitBias?: Record<number, number>;
  /** Seeds the request's own RNG: the same seed gives the same ids, alone or batched. */
  seed?: number;
  /** Stop strings: matched across token boundaries and never emitted. At most 16, each 1..1024 characters. */
  stop?: string[];
  /** Extra stop token ids (the model's EOS ids always stop unless ignoreEos). */
  stopTokenIds?: number[];
  ignoreEos?: boolean;
  /** Return the chosen token's logprob [false]. */
  logprobs?: boolean;
  /** With logprobs: the n most likely alternatives per token, 0..20 [0]. */
  topLogprobs?: number;
  /**
   * Speculative decoding: proposed tokens are checked by the model several at a time in one step. The
   * output is exactly what plain decoding gives (greedy: the same ids; sampling: the same distribution,
   * and with a seed the same ids). A method name is short for `{ method }`; false turns it off
   * [the engine's LoadOptions.speculative: 'auto' when a draft model is loaded, else off].
   */
  speculative?: SpeculativeMethod | SpeculativeOptions | false;
  /**
   * Constrained decoding: every token is sampled under a mask of what the format allows, so the output always
   * matches it (a JSON Schema, any JSON, a GBNF grammar or a regex). JSON formats stream partial-JSON events
   * (Chunk.json). At most one of responseFormat, grammar and regex.
   */
  responseFormat?: ResponseFormat;
  /** Short for responseFormat { type: 'grammar', grammar } (llama.cpp GBNF). */
  grammar?: string;
  /** Short for responseFormat { type: 'regex', pattern } (the whole output matches). */
  regex?: string;
  /**
   * Use the prefix cache [true]: the prompt's longest cached prefix is not prefilled again, and this request's
   * pages stay cached for later requests. false does neither (the output is the same either way).
   */
  cache?: boolean;
}

/** What a constrained request's output must be. */
export type ResponseFormat =
  | {
      type: 'json_schema';
      /** A JSON Schema (drafts 4 to 2020-12). */
      schema: Record<string, unknown> | boolean;
      /** Unsupported keywords are an error [true]; false drops them (reported in the last chunk's warnings). */
      strict?: boolean;
      /** Whitespace between JSON tokens ['compact']. */
      whitespace?: 'compact' | 'pretty';
    }
  | { type: 'json_object'; whitespace?: 'compact' | 'pretty' }
  | { type: 'grammar'; grammar: string }
  | { type: 'regex'; pattern: string };

/**
 * Who proposes tokens: 'ngram' copies what followed the latest earlier occurrence of the text's last
 * words (prompt lookup, no second model); 'draft' asks the draft model loaded beside the target; 'self'
 * runs the target's first layers; 'auto' picks 'draft' when a draft model is loaded, else 'ngram'.
 */
export type SpeculativeMethod = 'ngram' | 'draft' | 'self' | 'auto';

export interface SpeculativeOptions {
  method: SpeculativeMethod;
  /** Most tokens proposed per step, 1..16 [8 for ngram, 4 for draft and self]. */
  k?: number;
  /** Follow the acceptance rate and the measured step costs: k shrinks, and speculation turns itself off while it does not pay [true]. */
  adaptive?: boolean;
  /** 'ngram': the longest and shortest suffix (in tokens) looked up in earlier text [3, 1]. */
  ngramMax?: number;
  ngramMin?: number;
  /** 'self': how many of the target's layers draft [half of them, rounded up]. */
  layers?: number;
}

/** What speculation did for one request (on the last chunk's metrics). */
export interface SpeculativeMetrics {
  method: Exclude<SpeculativeMethod, 'auto'>;
  /** Tokens proposed, and how many of them the target accepted. */
  proposed: number;
  accepted: number;
  /** Target steps after the prompt (plain decode steps plus verify steps), and how many of them verified proposals. */
  targetSteps: number;
  verifySteps: number;
  /** Steps of the draft (draft model or the target's first layers). */
  draftSteps: number;
  /** Wall-clock ms of those target steps, of the verify steps among them, and of the draft steps. */
  targetMs: number;
  verifyMs: number;
  draftMs: number;
}

/** A generation request: exactly one of prompt (text), promptIds or messages (chat template applied). */
export interface GenerateRequest extends GenerationOptions {
  prompt?: string;
  promptIds?: number[];
  messages?: ChatMessage[];
  /**
   * With messages only: what to do when the chat does not fit ['none': a prompt over the limit is a
   * ContextLengthExceededError]. 'oldest' drops the oldest turns (a user message and the replies after it) until the
   * prompt leaves room for min(maxTokens, a quarter of the limit) new tokens (all of maxTokens with strictContext),
   * keeping every system message and the last turn; the last chunk's `truncated` says what was dropped. When even the
   * system messages and the last turn leave no room, it is a ContextLengthExceededError.
   */
  truncate?: 'oldest' | 'none';
  /**
   * With messages only: functions the model may call, rendered by the model's chat template (its `tools` variable;
   * ModelInfo.toolFormat says how). At most 128 tools. Not with responseFormat, grammar or regex.
   */
  tools?: ToolDefinition[];
  /** ['auto' when tools are given] See ToolChoice. */
  toolChoice?: ToolChoice;
  /** More than one call in one reply [true]. */
  parallelToolCalls?: boolean;
}

/**
 * Bounds of a request's fields, checked by the engine (request-checks.ts) and by the OpenAI surface's mapping (so that a
 * refusal there names the OpenAI field); each refusal's message states its bound.
 */
export const REQUEST_LIMITS = {
  /** Most temperature: past it sampling is uniform in all but name (and past ~3.4e38 an f32 is Infinity on the GPU). */
  temperature: 100,
  /** repetitionPenalty's range: a logit divided by 0.01 or multiplied by 10 stays finite in f32. */
  repetitionPenalty: [0.01, 10],
  /** Most |presencePenalty| and |frequencyPenalty| (OpenAI's and vLLM's range). */
  penalty: 2,
  /** Most logitBias entries: the sampler uploads and applies every entry in every step. */
  logitBiasEntries: 1024,
  /** Most |bias| of one entry, OpenAI's range (-100 bans a token in practice; the engine also takes -Infinity). */
  logitBias: 100,
  /** Most stop strings: OpenAI takes 4, vLLM and llama.cpp any number; each is searched for in every text piece. */
  stop: 16,
  /** Most UTF-16 code units of one stop string: text that could still grow into one is held back, up to this much. */
  stopLength: 1024,
  /** Most topLogprobs (OpenAI's bound too): the sampler returns at most this many alternatives per token. */
  topLogprobs: 20,
} as const;

/**
 * An embeddings request (EngineApi.embed): one input or many, as text (the model's tokenizer adds what the model
 * expects, e.g. BERT's [CLS] … [SEP]) or as token ids. Many inputs of different lengths run together, packed into
 * the encoder's passes (no padding), with other requests' inputs.
 */
export interface EmbedRequest {
  input: string | string[] | number[] | number[][];
  /**
   * Keep the first `dimensions` values of each vector (then normalised again, where the model normalises): Matryoshka
   * truncation, for models trained for it (ModelInfo.embedding.matryoshka) [the model's full width].
   */
  dimensions?: number;
  /**
   * Inputs longer than the model's context: cut to fit, keeping the first tokens and the tokenizer's closing token
   * (`truncate: true`), or refused with a ContextLengthExceededError naming the input (false) [false].
   */
  truncate?: boolean;
}

/** What EngineApi.embed returns: one vector per input, in the request's order. */
export interface EmbedResult {
  /** Pooled as the model says (ModelInfo.embedding.pooling) and, where it normalises, of unit length. */
  embeddings: Float32Array[];
  /** Tokens of all inputs as embedded (after truncation): OpenAI's usage.prompt_tokens. */
  promptTokens: number;
  /** Tokens of each input as embedded (absent from a remote server, which gives only the sum). */
  tokens?: number[];
  /** Indexes of the inputs that were cut to the context (`truncate: true`). */
  truncated: number[];
  /** Time from the call to the last vector, in ms. */
  ms: number;
}

/**
 * A rerank request (EngineApi.rerank), for a reranker (a cross-encoder: ModelInfo.rerank): how relevant each document
 * is to the query. Each (query, document) pair is one sequence of the model, in its tokenizer's pair template (BERT's
 * [CLS] query [SEP] document [SEP]); pairs of this and other requests run packed together, as embeddings do.
 */
export interface RerankRequest {
  query: string;
  /** The texts to score against the query (at most EMBED_LIMITS.inputs; none empty). */
  documents: string[];
  /** Keep the `topN` best results only [all of them]. */
  topN?: number;
  /**
   * A pair longer than the model's context: its document cut to fit, the query kept whole (`true`, as Cohere's and
   * Jina's rerank APIs do), or refused with a ContextLengthExceededError naming the document (false) [true].
   */
  truncate?: boolean;
}

/** What EngineApi.rerank returns: the documents best first. */
export interface RerankResult {
  /**
   * Best first: each document's index in the request and its relevance score, the model's raw logit (as llama.cpp's
   * server and sentence-transformers' CrossEncoder return it; sigmoid(score) is a probability in (0, 1)).
   */
  results: { index: number; score: number }[];
  /** Tokens of all pairs as scored (after truncation). */
  promptTokens: number;
  /** Indexes of the documents that were cut to fit beside the query. */
  truncated: number[];
  /** Time from the call to the last score, in ms. */
  ms: number;
}

/** Bounds of an embeddings request (EmbedRequest), checked by the engine and named in each refusal. */
export const EMBED_LIMITS = {
  /** Most inputs in one request (OpenAI's bound too). */
  inputs: 2048,
  /** Most tokens of all inputs together, after truncation (OpenAI's bound: 300,000). */
  tokens: 300_000,
} as const;

/** 'tool_calls': the reply ended after calls the model made (Chunk.toolCalls; OpenAI's finish_reason of the same name). */
export type FinishReason = 'stop' | 'length' | 'abort' | 'error' | 'tool_calls';

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
  /** Prompt tokens whose K/V came from the prefix cache (their prefill was skipped). */
  cachedTokens: number;
  completionTokens: number;
  /** Prefilled tokens (the prompt less the cached ones) per second. */
  prefillTokensPerSecond: number;
  decodeTokensPerSecond: number;
  /** Time the sequence spent paused because its consumer did not pull. */
  pausedMs: number;
  /** When the request speculated. */
  speculative?: SpeculativeMetrics;
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
  /**
   * JSON formats: the partial-JSON events of this chunk's text, in document order (keys before their values;
   * snapshots left out, see `partial`). Where the schema fixes a value's type (`"age":` an integer), a `type` event
   * for its path comes before any of its text.
   */
  json?: JsonEvent[];
  /** JSON formats: the whole document so far (the parsed value on the last chunk of a complete document). */
  partial?: unknown;
  /**
   * Requests with tools: this chunk's parts of the calls the model is making (never part of `text`: the call syntax
   * does not appear in the text).
   */
  toolCalls?: ToolCallDelta[];
  /** On the last chunk of a lenient json_schema request (or of lenient tool schemas): the keywords that were not enforced. */
  warnings?: { path: string; keyword: string; reason: string }[];
  /** On the last chunk. */
  metrics?: RequestMetrics;
  /**
   * On the last chunk of a `truncate: 'oldest'` request that dropped turns to fit: how many messages were dropped, and
   * the prompt tokens that saved (absent when nothing was dropped).
   */
  truncated?: { messages: number; tokens: number };
  /**
   * With finishReason 'error': what went wrong, after every token before it was delivered. A DeviceLostError when the
   * GPU device was lost mid-request (the engine then recovers by itself: see EngineStatus), a RemoteStreamError when
   * a remote stream broke, a RemoteFormatError when a remote JSON answer does not match its format. generate() ends
   * with this chunk; chat.completions streams throw the error, as OpenAI's client does on a broken stream.
   */
  error?: Error;
}

/** Where the model comes from, as the worker can read it. */
export type ModelSource =
  | { kind: 'url'; url: string }
  | { kind: 'hf-urls'; files: Record<string, string> }
  | { kind: 'files'; files: { name: string; blob: Blob }[] };

/**
 * What runs the model: 'webgpu' is intab's own WGSL kernels; 'onnx-wasm' is the CPU: intab's own wasm SIMD128 kernels
 * for a GGUF with q4_0 / q8_0 matrices, else onnxruntime-web's wasm over an ONNX graph (LoadOptions.cpuKernels);
 * 'onnx-webgpu' is onnxruntime-web's WebGPU execution provider over an ONNX graph (an ONNX folder's, or one written from
 * the GGUF or safetensors weights). 'auto' takes 'webgpu' on a hardware GPU and 'onnx-wasm' where WebGPU is missing or
 * its only adapter is a software one (there the CPU decodes faster).
 */
export type Backend = 'auto' | 'webgpu' | 'onnx-webgpu' | 'onnx-wasm';

export interface LoadOptions {
  /** What runs the model ['auto'] (ModelInfo.backend says which ran, and why). */
  backend?: Backend;
  quantize?: 'q8_0' | 'q4_0';
  /**
   * On 'onnx-wasm' in the browser, what runs the model: 'intab' is intab's own wasm SIMD128 kernels, which read a GGUF's
   * q4_0 / q8_0 blocks as stored (several times fewer bytes per token than onnxruntime's f32 graph) and re-quantize
   * other matrices to q8_0; 'onnxruntime' is the ONNX graph on onnxruntime-web. Absent: intab's kernels for a
   * Llama-family model whose layer matrices are q4_0, q8_0, q4_K or q6_K, onnxruntime for the rest (f32, f16 and bf16
   * weights run exactly there). ModelInfo.adapter says which ran, and info.warnings what was re-quantized.
   */
  cpuKernels?: 'intab' | 'onnxruntime';
  /**
   * Threads intab's CPU kernels split each matrix across [the cores, at most 4, where the page is cross-origin
   * isolated (COOP same-origin, COEP require-corp or credentialless), else 1: wasm threads need SharedArrayBuffer].
   * ModelInfo.adapter says how many run, and why only one.
   */
  cpuThreads?: number;
  /** KV-cache bytes [128 MiB]. */
  kvBudgetBytes?: number;
  /** Most sequences per step [8]. */
  maxBatch?: number;
  /** Most tokens per step (prefill chunks are cut to fit) [256]. */
  maxTokensPerStep?: number;
  /** Chunks a sequence may have queued before it is paused [8]. */
  maxQueuedChunks?: number;
  /**
   * A second, smaller model with the same tokenizer that proposes tokens for speculative decoding (its own
   * KV pages, in the same worker). A vocabulary that differs from the target's is a DraftMismatchError.
   */
  draft?: ModelSource;
  /** Default speculation of requests that say nothing ['auto' with a draft model, else false]. */
  speculative?: SpeculativeMethod | SpeculativeOptions | false;
  /**
   * The prefix cache [true]: K/V pages of finished requests (prompt and reply) and of running prompts stay in
   * the KV-cache, and a request that starts with a cached prefix (the earlier turns of a chat, a shared system
   * prompt) prefills only the rest. Outputs are the same with it off, only slower.
   */
  prefixCache?: boolean;
  /** Prefixes to prefill and pin during load (a system prompt), as engine.preload() does. */
  preload?: PreloadRequest | PreloadRequest[];
  /**
   * Read the prefix cache saved by saveCache() back at load [true where the Origin Private File System exists].
   * Only a save of the same weights, quantization, KV layout and architecture is used; anything else is ignored.
   */
  restoreCache?: boolean;
  /**
   * Keep the last `stepLog` scheduler steps for EngineStats.stepLog [0: no log] (at most 4096): which requests took
   * part in each step and what each did there (admitted, a prompt chunk prefilled, tokens emitted, finished), so a test
   * or a dashboard can see how the scheduler shared its steps. Off, it costs nothing; on, a few small objects per step.
   * For an engine the origin's tabs share, not one of the settings that pick the engine: a tab that asks for a longer
   * log than the engine keeps lengthens it.
   * @example
   * const engine = await createEngine({ model, stepLog: 64 });
   * const { stepLog } = await engine.stats(); // [{ step: 1, waiting: 0, requests: [{ stream: 0, admitted: true, prefill: 5, tokens: 1 }] }, ...]
   */
  stepLog?: number;
}

/** A prefix to prefill and pin: chat messages (rendered up to their end, no generation prompt), text, or ids. */
export type PreloadRequest = { messages: ChatMessage[]; tools?: ToolDefinition[] } | { prompt: string } | { promptIds: number[] };

/** A preloaded prefix (release it to let its pages be evicted). */
export interface PreloadInfo {
  /** What release() takes. */
  id: number;
  /** Tokens of the prefix, now pinned in the KV-cache. */
  tokens: number;
  /** Of them, those already cached (not prefilled again). */
  cachedTokens: number;
  /** Wall-clock ms the preload took. */
  ms: number;
}

/** What saveCache() wrote. */
export interface SaveCacheResult {
  /** The file in the origin's private file system. */
  file: string;
  pages: number;
  /** Token positions the saved pages hold. */
  tokens: number;
  bytes: number;
  ms: number;
}

/** Figures of the prefix cache. */
export interface PrefixCacheStats {
  /** Pages the cache holds, those pinned by preloads, and those nothing else references (evictable). */
  cachedPages: number;
  pinnedPages: number;
  evictablePages: number;
  /** Prompt tokens found in the cache at admission (hits) and prefilled (misses), since load. */
  hitTokens: number;
  missTokens: number;
  /** Pages given back to the pool under pressure. */
  evictions: number;
}

/** Figures of the engine as a whole (dashboards, tests). */
export interface EngineStats {
  /** Streams not yet delivered to the end. */
  streams: number;
  /** An embedding model: inputs of embed() requests waiting for the encoder. */
  embedQueued?: number;
  waiting: number;
  running: number;
  paused: number;
  freePages: number;
  /** Free pages plus those the prefix cache would give back (what requests can use): totalPages when nothing runs and nothing is pinned. */
  availablePages: number;
  totalPages: number;
  /**
   * Models with sliding-window layers beside full ones (Gemma 3) on WebGPU: those layers' own store, which keeps only
   * the positions a token still sees. `free` / `total` window pages.
   */
  windowPages?: { free: number; total: number };
  /** When the prefix cache is on. */
  prefixCache?: PrefixCacheStats;
  /** The draft model's own prefix cache (speculative decoding with a draft model). */
  draftPrefixCache?: PrefixCacheStats;
  /**
   * GPUBuffers alive on the engine's device (webgpu backend, loaded with load()): the weights, KV pages and scratch
   * buffers. Steady while the engine serves; growth over a long run is a leak (`intab bench soak` watches it).
   */
  gpuBuffers?: number;
  /** An engine shared by the tabs of an origin (createEngine's `share: 'origin'`): its sessions, as this tab sees them. */
  share?: ShareStats;
  /** With LoadOptions.stepLog: the last steps the scheduler ran, oldest first (a step that failed is not listed). */
  stepLog?: StepLogEntry[];
}

/** One scheduler step in EngineStats.stepLog: one runner step for every request that took part in it. */
export interface StepLogEntry {
  /** The step's number: 1 for the engine's first step, counting on across a device recovery. */
  step: number;
  /** Requests left waiting for admission once this step was planned. */
  waiting: number;
  /** The requests that took part, in the step's order (decoding ones first, then those prefilling). */
  requests: StepLogRequest[];
}

/** One request's part in a step (EngineStats.stepLog). */
export interface StepLogRequest {
  /** The request's id in the engine (requests are numbered in the order they came, across all of a shared engine's tabs). */
  stream: number;
  /**
   * On an engine the origin's tabs share: which tab asked. 0 is the tab reading the stats, 1, 2... the other attached
   * tabs in the order of ShareStats.requests, -1 a tab that has gone since. Absent on a tab's own engine.
   */
  session?: number;
  /** Admitted while this step was planned: it left the queue and got its K/V pages. */
  admitted?: true;
  /** Prompt tokens this step prefilled (one chunk of the prompt). */
  prefill?: number;
  /** Tokens this step added to its output: the sampled one, with the proposals accepted or the tokens a grammar forced after it. */
  tokens?: number;
  /** It finished in this step, for this reason. */
  finish?: FinishReason;
}

/** EngineStats.share: one engine's tabs (sessions), its requests by tab, and the memory held once for all of them. */
export interface ShareStats {
  /** Tabs attached to the engine now (this one included). */
  sessions: number;
  /** Streams not yet delivered to the end, per attached tab: this tab's first. */
  requests: number[];
  /** Times the model was loaded for these tabs (1 while the engine serves: attaching does not load). */
  loads: number;
  /** Weights and K/V pages held once for every tab, in bytes. */
  bytesHeld: number;
  /** What as many engines as there are tabs would hold (sessions × bytesHeld). */
  bytesIfSeparate: number;
}

/**
 * ModelInfo.share: where the engine runs for this tab. 'shared-worker': in the origin's SharedWorker, shared with the
 * other tabs that asked for the same model and settings (`attached`: it was already loaded, this tab loaded nothing);
 * 'elected-host' / 'elected-client' (no SharedWorker): in the Worker of one tab elected by a Web Lock, this one or
 * another, which the other tabs reach over a BroadcastChannel (when the host tab goes, the next tab in the lock's queue
 * loads the model from the model store and the others move to it); 'own': in this tab's own Worker (not asked for, or
 * not possible: `reason` says why).
 */
export interface ShareInfo {
  mode: 'shared-worker' | 'elected-host' | 'elected-client' | 'own';
  reason: string;
  attached?: boolean;
}

/**
 * The engine's device, as the main thread follows it: 'ready'; 'recovering' after a lost GPU device, while a new
 * device is acquired and the model reloaded (requests started meanwhile wait for it); 'failed' when the device was
 * lost again within a short window, or could not be re-acquired (requests then fail with `error`, a
 * DeviceRecoveryError; restart the engine).
 */
export type EngineState = 'ready' | 'recovering' | 'failed';

/** The engine's state and device history; `version` grows with every change. */
export interface EngineStatus {
  version: number;
  state: EngineState;
  /** Device losses since load. */
  losses: number;
  /** Completed recoveries since load. */
  recoveries: number;
  /** The last recovery's duration (new device, weights reloaded), ms. */
  recoveryMs?: number;
  /** While 'recovering': the DeviceLostError; when 'failed': the DeviceRecoveryError. */
  error?: Error;
}

export interface ModelInfo {
  /** What runs the model, and why it was chosen (LoadOptions.backend; 'remote': createEngine's remote server). */
  backend: { name: Exclude<Backend, 'auto'> | 'remote'; reason: string };
  /** With createEngine's `remote` and `model` both given: where requests run, and why (`prefer`, the checks made). */
  route?: { chosen: 'local' | 'remote'; reason: string };
  /** A remote engine's server and model (its layers, hidden, vocab, weightBytes and kvPages are 0: the server does not say). */
  remote?: { baseURL: string; model: string };
  arch: string;
  layers: number;
  hidden: number;
  vocab: number;
  contextLength: number;
  hasTokenizer: boolean;
  hasChatTemplate: boolean;
  /** How the model writes tool calls (see ToolFormatName); null without a chat template. */
  toolFormat: ToolFormatName | null;
  weightBytes: number;
  kvPages: number;
  /**
   * LoadOptions.kvBudgetBytes as asked, and the K/V bytes granted (whole pages). With `limit`, the budget was clamped:
   * one layer's K or V would have passed that limit of the adapter (its largest buffer or storage binding), so the
   * cache holds fewer pages than asked (a warning says so too). Absent on backends other than 'webgpu'.
   */
  kvBudget?: { asked: number; granted: number; limit?: 'maxStorageBufferBindingSize' | 'maxBufferSize' };
  adapter: string;
  /** The draft model, when one was loaded. */
  draft?: { arch: string; layers: number; hidden: number; weightBytes: number };
  /** Whether the prefix cache is on. */
  prefixCache?: boolean;
  /** The prefixes LoadOptions.preload pinned. */
  preloaded?: PreloadInfo[];
  /** What LoadOptions.restoreCache read back (absent when nothing was restored). */
  restored?: { pages: number; tokens: number; bytes: number; ms: number };
  /** Things that went wrong without failing the load (a corrupted cache file, deleted), each saying what happened. */
  warnings?: string[];
  /**
   * An embedding model (an encoder such as BERT, or a decoder trained to embed): its vectors' width, how a sequence's
   * states become one vector, whether vectors are L2-normalised, and whether `dimensions` may cut them (Matryoshka).
   * Such a model answers EngineApi.embed, and start() refuses to generate with it.
   */
  embedding?: { dimensions: number; pooling: 'mean' | 'cls' | 'last'; normalized: boolean; matryoshka: boolean };
  /**
   * A reranker (a cross-encoder with a classification head, e.g. bge-reranker, ms-marco-MiniLM): the names of its head's
   * outputs (the first is the relevance score). Such a model answers EngineApi.rerank, and neither embeds nor generates.
   */
  rerank?: { labels: readonly string[] };
  /**
   * The model store (createEngine, main thread): the model's id there, the bytes downloaded now (0: every file came
   * from the store), whether every file is known to hash to what it must (hashed now, or stored unchanged since it was),
   * and whether the origin's storage is persisted (navigator.storage.persist()'s answer when a first download asked
   * it, else persisted()'s).
   */
  store?: { id: string; downloaded: number; verified: boolean; persisted: boolean };
  /** createEngine: whether this tab shares the engine with the origin's other tabs, and why (see ShareInfo). */
  share?: ShareInfo;
}

export interface LoadProgress {
  loaded: number;
  total: number;
  /**
   * What is in progress: the model's files downloading into the model store, their hashes checked there, or the
   * weights uploaded to the GPU [upload].
   */
  phase?: 'download' | 'verify' | 'upload';
  /** Download: bytes per second over the last seconds, and the seconds left at that speed. */
  bytesPerSecond?: number;
  etaSeconds?: number;
  /** Download and verify: each file's bytes. */
  files?: { name: string; loaded: number; total: number }[];
}

/**
 * The worker's API. Streams are pull-based: start() registers a request and returns its id; each next()
 * resolves with everything produced since the previous pull (waiting if nothing is ready), and the stream
 * is over after a chunk with a finishReason. Aborting the signal given to start() ends the stream with
 * finishReason 'abort' once the sequence's pages are freed.
 */
export interface EngineApi {
  /** Opens, uploads and warms a model; aborting `signal` stops the download and upload and frees what was loaded. */
  load(source: ModelSource, options: LoadOptions, onProgress?: (p: LoadProgress) => void, signal?: AbortSignal): Promise<ModelInfo>;
  start(request: GenerateRequest, signal?: AbortSignal): Promise<number>;
  next(stream: number): Promise<Chunk>;
  /** Cancel a stream (what `break` out of for-await does); resolves when its pages are freed. */
  cancel(stream: number): Promise<void>;
  /**
   * Embeds texts or token ids with an embedding model (ModelInfo.embedding): one vector per input, in order. Aborting
   * `signal` drops the inputs not yet embedded and rejects with the signal's reason.
   */
  embed(request: EmbedRequest, signal?: AbortSignal): Promise<EmbedResult>;
  /**
   * Scores documents against a query with a reranker (ModelInfo.rerank), best first. Aborting `signal` drops the pairs
   * not yet scored and rejects with the signal's reason.
   */
  rerank(request: RerankRequest, signal?: AbortSignal): Promise<RerankResult>;
  /** Prefills a prefix and pins it in the prefix cache; requests that start with it skip its prefill. */
  preload(request: PreloadRequest, signal?: AbortSignal): Promise<PreloadInfo>;
  /** Unpins a preloaded prefix (its pages stay cached until evicted). Idempotent. */
  release(preload: number): void | Promise<void>;
  /** Writes the pinned prefixes (with `all`, the whole prefix cache) to the origin's private file system. */
  saveCache(options?: { all?: boolean }): Promise<SaveCacheResult>;
  stats(): EngineStats | Promise<EngineStats>;
  /** The engine's status once its version is past `since` (at once without it): one pending call follows every change. */
  status(since?: number): Promise<EngineStatus>;
  /** Free every GPU resource; the engine cannot be used afterwards. */
  destroy(): Promise<void>;
}
