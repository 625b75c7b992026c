// The engine's API (start / next / cancel …) over a remote OpenAI-compatible server, so createEngine({ remote }) gives
// the same IntabEngine as a model in the tab: generate() and chat.completions.create() stream from it, with the same
// chunks, abort and errors. A GenerateRequest becomes a `/v1/chat/completions` (messages) or `/v1/completions` (a
// prompt or ids) request with SSE; sampling, stop strings, seed, logprobs, JSON formats and tools are passed through,
// and the server's streamed tool calls come back as the engine's Chunk.toolCalls.

import type { ChatMessage, Chunk, EmbedRequest, EmbedResult, RerankRequest, RerankResult, EngineApi, EngineStats, EngineStatus, GenerateRequest, ModelInfo, PreloadInfo, ResponseFormat, SaveCacheResult, ToolFormatName } from '@intab/engine/contract';
import { EngineClosedError, InvalidRequestError, UnknownStreamError } from '@intab/engine/errors';
import { EMBED_FIELDS, GENERATE_FIELDS, RERANK_FIELDS, checkKnownFields, checkRole, templateRole } from '@intab/engine/field-checks';
import { base64ToVector } from '../openai-embeddings.ts';
import { RemoteHttpError, RemoteProtocolError, RemoteUnsupportedError } from './errors.ts';
import { remoteConfig, send, type RemoteConfig, type RemoteOptions } from './http.ts';
import { RemoteStream, type JsonValidator, type RemoteCall } from './stream.ts';

/** The tool formats a server may name in /models' `tool_format` (intab serve does). */
const TOOL_FORMATS: readonly ToolFormatName[] = ['hermes', 'llama3', 'mistral', 'phi4', 'generic'];

/**
 * The request body a server gets for a GenerateRequest. Options with OpenAI names keep them; top_k, min_p,
 * repetition_penalty, stop_token_ids and ignore_eos (vLLM, SGLang and llama.cpp names), truncate and strict_context
 * (intab serve's) are sent only when set;
 * `return_token_ids` asks vLLM-style servers (and intab serve) for the generated ids. grammar and regex formats are
 * InvalidRequestErrors: OpenAI-compatible servers agree only on JSON formats. A field a GenerateRequest does not have,
 * and a message role outside CHAT_ROLES, are refused as a local engine refuses them; 'developer' is sent as 'system'
 * (every server's template knows 'system'; OpenAI reads 'system' as 'developer' on the models that have it).
 */
export function remoteCall(request: GenerateRequest, model: string): RemoteCall {
  if (typeof request !== 'object' || request === null) throw new InvalidRequestError('request', request, 'an object with prompt, promptIds or messages');
  checkKnownFields(request, GENERATE_FIELDS, 'generate()');
  const given = (['prompt', 'promptIds', 'messages'] as const).filter((k) => request[k] !== undefined);
  if (given.length !== 1) throw new InvalidRequestError(given.length ? given.join(' and ') : 'prompt', given.length ? 'all of them' : undefined, 'exactly one of prompt, promptIds and messages');
  const body: Record<string, unknown> = { model, stream: true, stream_options: { include_usage: true }, return_token_ids: true };
  const r = request;
  let path: RemoteCall['path'];
  if (r.messages !== undefined) {
    if (!Array.isArray(r.messages) || r.messages.length === 0) throw new InvalidRequestError('messages', r.messages, 'a non-empty array of { role, content }');
    body.messages = r.messages.map((m, i) => wireMessage(m, i));
    path = '/chat/completions';
    // Tools go as they are (OpenAI's shape): the server renders them in its model's format and streams the calls back.
    if (r.tools !== undefined) body.tools = r.tools;
    if (r.toolChoice !== undefined) body.tool_choice = r.toolChoice;
    if (r.parallelToolCalls !== undefined) body.parallel_tool_calls = r.parallelToolCalls;
  } else if (r.tools !== undefined || r.toolChoice !== undefined || r.parallelToolCalls !== undefined) {
    const field = r.tools !== undefined ? 'tools' : r.toolChoice !== undefined ? 'toolChoice' : 'parallelToolCalls';
    throw new InvalidRequestError(field, r[field], 'absent with a prompt: tools need messages (the chat template renders them)');
  } else if (r.promptIds !== undefined) {
    if (!Array.isArray(r.promptIds) || r.promptIds.length === 0 || r.promptIds.some((n) => !Number.isInteger(n) || n < 0)) throw new InvalidRequestError('promptIds', r.promptIds, 'a non-empty array of token ids');
    body.prompt = r.promptIds;
    path = '/completions';
  } else {
    if (typeof r.prompt !== 'string') throw new InvalidRequestError('prompt', r.prompt, 'a string');
    body.prompt = r.prompt;
    path = '/completions';
  }
  const pass: [keyof GenerateRequest, string][] = [
    ['maxTokens', 'max_tokens'],
    ['temperature', 'temperature'],
    ['topP', 'top_p'],
    ['topK', 'top_k'],
    ['minP', 'min_p'],
    ['presencePenalty', 'presence_penalty'],
    ['frequencyPenalty', 'frequency_penalty'],
    ['repetitionPenalty', 'repetition_penalty'],
    ['seed', 'seed'],
    ['logitBias', 'logit_bias'],
    ['stopTokenIds', 'stop_token_ids'],
    ['ignoreEos', 'ignore_eos'],
    // intab's own (intab serve takes them; other servers ignore or refuse what they do not know).
    ['truncate', 'truncate'],
    ['strictContext', 'strict_context'],
  ];
  for (const [from, to] of pass) if (r[from] !== undefined) body[to] = r[from];
  if (r.stop !== undefined) body.stop = r.stop;
  const logprobs = r.logprobs === true;
  if (logprobs) {
    // Chat takes logprobs: true and top_logprobs: n; legacy completions take logprobs: n.
    if (path === '/chat/completions') {
      body.logprobs = true;
      if (r.topLogprobs) body.top_logprobs = r.topLogprobs;
    } else body.logprobs = r.topLogprobs ?? 0;
  }
  if (r.grammar !== undefined || r.regex !== undefined || r.responseFormat?.type === 'grammar' || r.responseFormat?.type === 'regex') {
    const field = r.grammar !== undefined ? 'grammar' : r.regex !== undefined ? 'regex' : 'responseFormat.type';
    throw new InvalidRequestError(field, r.grammar ?? r.regex ?? r.responseFormat?.type, "absent on a remote engine: OpenAI-compatible servers share only JSON formats (responseFormat 'json_schema' or 'json_object'); GBNF and regex constraints run on a local engine");
  }
  const format = r.responseFormat;
  if (format !== undefined) {
    if (format.type === 'json_object') body.response_format = { type: 'json_object' };
    else if (format.type === 'json_schema') body.response_format = { type: 'json_schema', json_schema: { name: 'response', schema: format.schema, strict: format.strict !== false } };
    else throw new InvalidRequestError('responseFormat.type', (format as { type?: unknown }).type, "'json_schema' or 'json_object'");
  }
  return { path, body, logprobs, ...(format ? { format } : {}) };
}

/**
 * One message as OpenAI's API spells it: an assistant's toolCalls as tool_calls (content null when it has none), a
 * tool result's toolCallId as tool_call_id (its name stays here: OpenAI's tool messages have none, the id says it).
 */
function wireMessage(m: ChatMessage, i: number): Record<string, unknown> {
  const ok = typeof m?.role === 'string' && (typeof m.content === 'string' || (m.content === null && m.role === 'assistant'));
  if (!ok) throw new InvalidRequestError(`messages[${i}]`, m, 'an object { role, content } with string fields (content null only on an assistant message of tool calls)');
  checkRole(m.role, `messages[${i}].role`);
  const out: Record<string, unknown> = { role: templateRole(m.role), content: m.content };
  if (m.toolCalls !== undefined) {
    if (m.role !== 'assistant' || !Array.isArray(m.toolCalls)) throw new InvalidRequestError(`messages[${i}].toolCalls`, m.toolCalls, 'an array of calls, on an assistant message');
    if (m.toolCalls.length > 0) out.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments } }));
  }
  if (m.role === 'tool') {
    if (typeof m.toolCallId !== 'string') throw new InvalidRequestError(`messages[${i}].toolCallId`, m.toolCallId, 'the id of the call whose result this message carries');
    out.tool_call_id = m.toolCallId;
  }
  return out;
}

/** The validator of a json_schema format (imported only when one is used), for the draft the schema declares. */
async function validatorFor(format: ResponseFormat | undefined): Promise<JsonValidator | undefined> {
  if (format?.type !== 'json_schema') return undefined;
  const { Validator } = await import('@cfworker/json-schema');
  const s = format.schema;
  const declared = typeof s === 'object' && s !== null && typeof s.$schema === 'string' ? s.$schema : '';
  const draft = /draft-04/.test(declared) ? '4' : /draft-0[67]/.test(declared) ? '7' : /2019-09/.test(declared) ? '2019-09' : '2020-12';
  return new Validator(s as never, draft, false);
}

/** What the server says about its models (GET /models): OpenAI's list, with vLLM's max_model_len when present. */
interface ModelList {
  data?: { id?: unknown; max_model_len?: unknown; owned_by?: unknown; tool_format?: unknown }[];
}

export class RemoteEngineApi implements EngineApi {
  readonly config: RemoteConfig;
  private readonly streams = new Map<number, RemoteStream>();
  private nextId = 1;
  private closed = false;
  private readonly watchers = new Set<(e: unknown) => void>();

  constructor(options: RemoteOptions) {
    this.config = remoteConfig(options);
  }

  /**
   * Asks the server for its models (GET /models, with the connect timeout and retries): an unreachable server or a
   * refused key fails here, not on the first request. A server without /models (404) or without this model in its
   * list still loads, with a warning.
   */
  async load(_source?: unknown, _options?: unknown, _onProgress?: unknown, signal?: AbortSignal): Promise<ModelInfo> {
    const c = this.config;
    const warnings: string[] = [];
    let contextLength = 0;
    let toolFormat: ToolFormatName | null = null;
    try {
      const { response } = await send(c, '/models', { method: 'GET' }, signal);
      const list = (await response.json().catch(() => ({}))) as ModelList;
      const entry = Array.isArray(list.data) ? list.data.find((m) => m?.id === c.model) : undefined;
      if (!entry) warnings.push(`${c.baseURL}/models does not list '${c.model}'${Array.isArray(list.data) ? ` (it lists ${list.data.map((m) => String(m?.id)).slice(0, 5).join(', ')})` : ''}: requests may fail with 404.`);
      if (typeof entry?.max_model_len === 'number') contextLength = entry.max_model_len;
      if (typeof entry?.tool_format === 'string' && (TOOL_FORMATS as readonly string[]).includes(entry.tool_format)) toolFormat = entry.tool_format as ToolFormatName;
    } catch (err) {
      if (!(err instanceof RemoteHttpError && err.status === 404)) throw err;
      warnings.push(`${c.baseURL}/models is not served (404): the model was not checked.`);
    }
    return {
      backend: { name: 'remote', reason: `remote: ${c.baseURL} (${c.model})` },
      remote: { baseURL: c.baseURL, model: c.model },
      arch: c.model,
      layers: 0,
      hidden: 0,
      vocab: 0,
      contextLength,
      hasTokenizer: true,
      hasChatTemplate: true,
      // The server renders tools in its model's own format and parses the calls itself: tools are forwarded whatever
      // this says. intab serve names its format in /models (tool_format); another server's stays unknown (null).
      toolFormat,
      weightBytes: 0,
      kvPages: 0,
      adapter: 'remote',
      ...(warnings.length ? { warnings } : {}),
    };
  }

  async start(request: GenerateRequest, signal?: AbortSignal): Promise<number> {
    if (this.closed) throw new EngineClosedError('destroyed');
    const call = remoteCall(request, this.config.model);
    call.validator = await validatorFor(call.format);
    const stream = new RemoteStream(this.config, call, signal);
    const id = this.nextId++;
    this.streams.set(id, stream);
    try {
      await stream.open();
    } catch (err) {
      this.streams.delete(id);
      throw err;
    }
    return id;
  }

  async next(id: number): Promise<Chunk> {
    const stream = this.streams.get(id);
    if (!stream) throw new UnknownStreamError(id);
    const chunk = await stream.next();
    if (chunk.finishReason !== null) this.streams.delete(id);
    return chunk;
  }

  async cancel(id: number): Promise<void> {
    this.streams.get(id)?.cancel();
    this.streams.delete(id);
  }

  /**
   * POST /embeddings on the server (base64 vectors: a quarter of the bytes of floats), one vector per input in order.
   * `truncate` is sent only when set (intab serve reads it; others ignore it).
   */
  async embed(request: EmbedRequest, signal?: AbortSignal): Promise<EmbedResult> {
    if (this.closed) throw new EngineClosedError('destroyed');
    const started = performance.now();
    if (typeof request !== 'object' || request === null) throw new InvalidRequestError('request', request, 'an object with `input`');
    checkKnownFields(request, EMBED_FIELDS, 'embed()');
    const body: Record<string, unknown> = { model: this.config.model, input: request.input, encoding_format: 'base64' };
    if (request.dimensions !== undefined) body.dimensions = request.dimensions;
    if (request.truncate !== undefined) body.truncate = request.truncate;
    const { url, text, answer } = await this.postJson<{ data?: { index?: unknown; embedding?: unknown }[]; usage?: { prompt_tokens?: unknown } }>('/embeddings', body, signal);
    const count = typeof request.input === 'string' || (Array.isArray(request.input) && request.input.every((x) => typeof x === 'number')) ? 1 : (request.input as unknown[]).length;
    if (!Array.isArray(answer?.data) || answer.data.length !== count) throw new RemoteProtocolError(url, `the answer has ${Array.isArray(answer?.data) ? answer.data.length : 'no'} embeddings for ${count} inputs`, text);
    const embeddings: Float32Array[] = new Array(count);
    for (const [k, item] of answer.data.entries()) {
      const index = typeof item?.index === 'number' ? item.index : k;
      const e = item?.embedding;
      const vector = typeof e === 'string' ? base64ToVector(e) : Array.isArray(e) && e.every((x) => typeof x === 'number') ? Float32Array.from(e) : undefined;
      if (!vector || index < 0 || index >= count || embeddings[index]) throw new RemoteProtocolError(url, `embedding ${k} of the answer is neither base64 nor a list of numbers at an index of its own`, text);
      embeddings[index] = vector;
    }
    const promptTokens = typeof answer.usage?.prompt_tokens === 'number' ? answer.usage.prompt_tokens : 0;
    return { embeddings, promptTokens, truncated: [], ms: performance.now() - started };
  }

  /**
   * POST /rerank on the server (intab serve, llama.cpp's server; Jina's and Cohere's shape): the documents best first.
   * `top_n` and `truncate` are sent only when set.
   */
  async rerank(request: RerankRequest, signal?: AbortSignal): Promise<RerankResult> {
    if (this.closed) throw new EngineClosedError('destroyed');
    const started = performance.now();
    if (typeof request !== 'object' || request === null) throw new InvalidRequestError('request', request, 'an object with `query` and `documents`');
    checkKnownFields(request, RERANK_FIELDS, 'rerank()');
    if (!Array.isArray(request.documents)) throw new InvalidRequestError('documents', request.documents, 'a non-empty list of non-empty strings');
    const body: Record<string, unknown> = { model: this.config.model, query: request.query, documents: request.documents };
    if (request.topN !== undefined) body.top_n = request.topN;
    if (request.truncate !== undefined) body.truncate = request.truncate;
    const { url, text, answer } = await this.postJson<{ results?: { index?: unknown; relevance_score?: unknown }[]; usage?: { prompt_tokens?: unknown } }>('/rerank', body, signal);
    const count = request.documents.length;
    if (!Array.isArray(answer?.results) || answer.results.length > count) throw new RemoteProtocolError(url, `the answer has ${Array.isArray(answer?.results) ? answer.results.length : 'no'} results for ${count} documents`, text);
    const seen = new Set<number>();
    const results = answer.results.map((r, k) => {
      const { index, relevance_score: score } = r ?? {};
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= count || seen.has(index) || typeof score !== 'number') {
        throw new RemoteProtocolError(url, `result ${k} of the answer is not a document's index of its own with a numeric relevance_score`, text);
      }
      seen.add(index);
      return { index, score };
    });
    // Best first, whatever order the server kept (llama.cpp's server keeps the documents' order).
    results.sort((a, b) => b.score - a.score || a.index - b.index);
    const promptTokens = typeof answer.usage?.prompt_tokens === 'number' ? answer.usage.prompt_tokens : 0;
    return { results: request.topN !== undefined ? results.slice(0, request.topN) : results, promptTokens, truncated: [], ms: performance.now() - started };
  }

  /**
   * A JSON POST to the server's `path`: its URL (for errors), the answer's text, and the text parsed (undefined when it
   * is not JSON: the caller's RemoteProtocolError quotes the text).
   */
  private async postJson<T>(path: string, body: Record<string, unknown>, signal: AbortSignal | undefined): Promise<{ url: string; text: string; answer: T | undefined }> {
    const { response } = await send(this.config, path, { method: 'POST', body }, signal);
    const text = await response.text();
    let answer: T | undefined;
    try {
      answer = JSON.parse(text) as T;
    } catch {
      answer = undefined;
    }
    return { url: `${this.config.baseURL}${path}`, text, answer };
  }

  preload(): Promise<PreloadInfo> {
    return Promise.reject(new RemoteUnsupportedError(this.config.baseURL, 'preload()', 'the server keeps its own prefix cache (vLLM, SGLang and llama.cpp reuse a shared prompt prefix by themselves); send requests as they are.'));
  }

  release(): void {
    // Nothing is ever pinned on a remote engine (preload() refuses), so there is nothing to release.
  }

  saveCache(): Promise<SaveCacheResult> {
    return Promise.reject(new RemoteUnsupportedError(this.config.baseURL, 'saveCache()', 'the KV-cache lives on the server.'));
  }

  stats(): EngineStats {
    let paused = 0;
    for (const s of this.streams.values()) if (s.paused) paused++;
    const n = this.streams.size;
    return { streams: n, waiting: 0, running: n - paused, paused, freePages: 0, availablePages: 0, totalPages: 0 };
  }

  /** A server has no device here to lose: always ready. Watchers (since given) wait until destroy(), which ends them. */
  status(since?: number): Promise<EngineStatus> {
    const ready: EngineStatus = { version: 0, state: 'ready', losses: 0, recoveries: 0 };
    if (since === undefined || since < 0) return Promise.resolve(ready);
    return new Promise((_, reject) => this.watchers.add(reject));
  }

  async destroy(): Promise<void> {
    this.closed = true;
    for (const reject of this.watchers) reject(new EngineClosedError('destroyed'));
    this.watchers.clear();
    for (const s of this.streams.values()) s.cancel();
    this.streams.clear();
  }
}
