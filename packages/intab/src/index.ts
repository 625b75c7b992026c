// intab: run language models in a browser tab on WebGPU. createEngine() loads a model into a Web Worker;
// engine.generate() streams chunks with `for await` (AbortSignal and `break` cancel); the OpenAI-compatible
// engine.chat.completions.create() and the SSE helpers let code written for OpenAI's API run unchanged.

export { createEngine } from './engine.ts';
export type { CreateEngineOptions, IntabEngine, RequestOptions, ChatCompletions, Embeddings, Preloaded } from './engine-types.ts';
// OpenAI's embeddings API (engine.embeddings.create, POST /v1/embeddings).
export { toEmbedRequest, toEmbeddingResponse, vectorToBase64, base64ToVector, type EmbeddingCreateParams, type CreateEmbeddingResponse, type Embedding } from './openai-embeddings.ts';
export { toRerankRequest, toRerankResponse, type RerankCreateParams, type RerankResponse } from './openai-rerank.ts';
export { resolveModelSource, isHfId, HF_FOLDER_FILES, type ModelInput, type HfModelRef, type ResolveModelOptions } from './model-source.ts';
export { toReadableStream, encodeSSE, decodeSSE, type StreamSource, type SseInput } from './sse.ts';
// TransformStreams that compose with pipeThrough: text only, SSE out and in, partial-JSON events, stop strings, pacing.
export { textOnly, sseEncoder, sseDecoder, jsonEventStream, stopFilter, smoother, type SmootherOptions } from './transforms.ts';
export { aggregate, AggregateStream, Responses, responses, type AggregateOptions, type AggregateChunk, type ResponseHeader, type StoredResponse, type ResponseStatus, type ListOptions, type ResponsesOptions, type ResponseStoreProblem } from './responses.ts';
export {
  toGenerateRequest,
  toChatCompletionChunks,
  toChatCompletion,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatCompletionCreateParams,
  type ChatCompletionCreateParamsBase,
  type ChatCompletionCreateParamsStreaming,
  type ChatCompletionCreateParamsNonStreaming,
  type ChatCompletionMessageParam,
  type ChatCompletionTool,
  type ChatCompletionToolChoiceOption,
  type ChatCompletionMessageToolCall,
  type ChatCompletionChunkToolCall,
  type ResponseFormatParam,
  type ChatCompletionContentPartText,
  type ChatCompletionTokenLogprob,
  type ChatCompletionTopLogprob,
  type ChoiceLogprobs,
  type CompletionUsage,
  type ChatFinishReason,
  type CompletionMeta,
} from './openai.ts';
// The remote backend: createEngine({ remote }) streams from an OpenAI-compatible server through the same IntabEngine.
export type { RemoteOptions } from './remote/http.ts';
// The model store: models kept in this origin's storage, verified by SHA-256 (createEngine uses it by default).
export { modelStore, ModelStore, type StoredModel, type StoredFile, type StoreProgress, type EnsureOptions, type EnsureResult, type ModelStoreOptions, type VerifyReport, type VerifiedFile } from './store/model-store.ts';
export { opfsBackend, cacheBackend, type StoreBackend, type StoreStamp } from './store/backend.ts';
// The page's half of the Service Worker's OpenAI endpoint (the worker's half is 'intab/service-worker').
export { serveOpenAI, type ServeOpenAIOptions } from './openai-server.ts';
// The one OpenAI HTTP core every HTTP-ish surface is a transport over: routes, errors, JSON and SSE, over any engine.
export { handleOpenAI, type OpenAIHttpRequest, type OpenAIHttpResponse, type OpenAIHttpOptions } from './openai-http.ts';
export { answerCompletion, prepareCompletion, type OpenAIEngine, type Endpoint as OpenAIEndpoint, type Route as OpenAIRoute, type AdmissionRequest, type PreparedCompletion, type Tally, type Admission, type CompletionEnd, type CompletionOptions, type CompletionAnswer, type ObjectStream } from './openai-answer.ts';
export { errorResponse, openAIError, isErrorReply, type OpenAIErrorBody, type OpenAIErrorFields, type OpenAIErrorReply } from './openai-errors.ts';
// Partial-JSON events from any text stream (a remote server's deltas), as constrained requests stream them.
export { jsonEvents, PartialJsonParser, JsonAssembler, assembleJson } from '@intab/grammar/partial';

// The contract with the worker: request, chunk and model types.
export type {
  ChatMessage,
  GenerationOptions,
  GenerateRequest,
  EmbedRequest,
  EmbedResult,
  RerankRequest,
  RerankResult,
  FinishReason,
  TokenLogprob,
  RequestMetrics,
  Chunk,
  ModelSource,
  LoadOptions,
  Backend,
  ModelInfo,
  LoadProgress,
  EngineApi,
  EngineStats,
  StepLogEntry,
  StepLogRequest,
  EngineState,
  EngineStatus,
  PrefixCacheStats,
  PreloadRequest,
  PreloadInfo,
  SaveCacheResult,
  SpeculativeMethod,
  SpeculativeOptions,
  SpeculativeMetrics,
  ResponseFormat,
  JsonEvent,
  JsonPath,
  JsonType,
  JsonEventKind,
  ToolFunction,
  ToolDefinition,
  ToolChoice,
  ToolCall,
  ToolCallDelta,
  ToolFormatName,
} from '@intab/engine/contract';

// ---- errors ----
// Everything intab throws is an IntabError with a stable snake_case `code` to switch on (the README's table lists every
// code); the classes below refine it. Errors raised in the worker arrive as their own classes, with their fields
// (instanceof works). errors.test.ts holds these exports to the one list of classes (error-list.ts).
export { IntabError } from '@intab/errors';
export { IntabGpuError, WebGpuUnavailableError, DeviceLostError, ShapeError, UnsupportedError, LimitError, GpuValidationError, GpuOutOfMemoryError } from '@intab/gpu';
export { IntabModelError, ModelFormatError, UnsupportedModelError, ModelMismatchError, KvCacheFullError, ChatTemplateError, ModelSourceError, RerankInputError } from '@intab/model/errors';
export { IntabGrammarError, UnsupportedSchemaError, InvalidSchemaError, GrammarSyntaxError, GrammarBudgetError, type UnsupportedKeyword } from '@intab/grammar/errors';
export { PartialJsonError } from '@intab/grammar/partial';
export { IntabOnnxError, OnnxFormatError, OnnxWriteError, OnnxLayoutError, OnnxRunError, OnnxUnsupportedError } from '@intab/onnx/errors';
export {
  IntabEngineError,
  InvalidRequestError,
  ContextLengthExceededError,
  EngineClosedError,
  EngineStateError,
  ModelKindError,
  UnknownStreamError,
  TokenizerRequiredError,
  DraftMismatchError,
  CacheStorageError,
  DeviceRecoveryError,
  SharedMemoryError,
  DownloadError,
  ToolCallParseError,
} from '@intab/engine/errors';
export { WorkerError, EngineHostLostError, InvalidArgumentError, SseFormatError, IntegrityError, QuotaError, ResponseStoreError } from './errors.ts';
export { RemoteError, RemoteConnectionError, RemoteHttpError, RemoteTimeoutError, RemoteProtocolError, RemoteStreamError, RemoteFormatError, RemoteUnsupportedError } from './remote/errors.ts';
