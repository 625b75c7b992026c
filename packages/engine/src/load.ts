// Putting a model (and the draft model that speculates for it) on the GPU: its files opened and checked against each
// other (openModels), weights uploaded, every pipeline compiled (warm-up, so the first request does not pay for shader
// compilation), and the draft's KV-cache sized like the target's (loadRunners), then described for the main thread
// (loadModel). The engine's load() and the CLI (its page and --runtime node) both load through here. chooseBackend
// decides what runs the model (LoadOptions.backend), and loadOnnxModel puts it on onnxruntime-web instead
// (@intab/onnx, imported only then, so apps on the WebGPU kernels never download ORT), or on the host's own onnxruntime
// when the choice carries one (the CLI's Node runtime hands in onnxruntime-node: BackendChoice.ort).

import { isSoftwareAdapter, requestGpu, type Gpu } from '@intab/gpu';
import type { OrtRuntime } from '@intab/onnx';
import { createBertRunner, createDecoderEmbedRunner, isEncoderFiles, openTokenizer, Runner, type EmbeddingModelFiles, type EncoderRunner, type LoadProgress, type ModelFiles, type StepRunner, type Tokenizer } from '@intab/model';
import type { Backend, ModelInfo } from './contract.ts';
import { InvalidRequestError, ModelSourceError } from './errors.ts';
import { checkDraft, describeModel, modelFacts } from './open-model.ts';
import { noCacheAdvice } from './prefix-cache-api.ts';

// The rule the kernels pick their variants by (@intab/gpu): the backend choice below uses the same one.
export { isSoftwareAdapter };

/** A model's files and tokenizer, and its draft's files, checked to share the vocabulary. */
export interface OpenedModels {
  model: ModelFiles;
  tokenizer?: Tokenizer;
  draftModel?: ModelFiles;
}

/**
 * Opens the model (and the draft, when a source is given) with `open`, and checks that the draft shares the model's
 * vocabulary and tokens before either is uploaded (DraftMismatchError).
 * @example
 * const opened = await openModels((s) => openModel(s, signal), source, options.draft);
 */
export async function openModels<S>(open: (source: S) => Promise<ModelFiles>, source: S, draftSource?: S): Promise<OpenedModels> {
  const model = await open(source);
  const tokenizer = openTokenizer(model);
  const draftModel = draftSource === undefined ? undefined : await open(draftSource);
  if (draftModel) checkDraft(model, tokenizer, draftModel, openTokenizer(draftModel));
  return { model, tokenizer, draftModel };
}

export interface RunnersOptions {
  /** The target's KV-cache bytes; the draft gets as many pages. */
  kvBudgetBytes: number;
  maxBatch: number;
  /** Most tokens in one step (the runners' activations are sized for it; at least maxBatch). */
  maxTokensPerStep?: number;
  quantize?: 'q8_0' | 'q4_0';
  /** On 'onnx-wasm': what runs the matrices (LoadOptions.cpuKernels). */
  cpuKernels?: 'intab' | 'onnxruntime';
  /** On intab's CPU kernels: their threads (LoadOptions.cpuThreads). */
  cpuThreads?: number;
  onProgress?: (p: LoadProgress) => void;
  onDraftProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
}

/**
 * Loads `model` (and `draftModel`) onto `gpu` and warms them; on failure everything loaded so far is freed.
 * @example
 * const { runner, draft } = await loadRunners(gpu, await openModel(source), undefined, { kvBudgetBytes: 128 << 20, maxBatch: 8 });
 */
export async function loadRunners(gpu: Gpu, model: ModelFiles, draftModel: ModelFiles | undefined, o: RunnersOptions): Promise<{ runner: Runner; draft?: Runner }> {
  const maxTokensPerStep = Math.max(o.maxTokensPerStep ?? 512, o.maxBatch);
  const runner = await Runner.load(gpu, model.config, model.tensors, { kvBudgetBytes: o.kvBudgetBytes, maxBatch: o.maxBatch, maxTokensPerStep, quantize: o.quantize, onProgress: o.onProgress, signal: o.signal });
  let draft: Runner | undefined;
  try {
    await runner.warmup();
    if (draftModel) {
      // As many pages as the target's cache. The target's prefix cache may share pages the draft cannot; a sequence
      // the draft has no room for is simply not drafted for (Speculator), never failed.
      const d = draftModel.config;
      const pageBytes = 2 * d.layers * d.kvHeads * d.headDim * 4 * runner.kv.pageSize;
      draft = await Runner.load(gpu, d, draftModel.tensors, { kvBudgetBytes: (runner.kv.pages + 1) * pageBytes, maxBatch: o.maxBatch, maxTokensPerStep, quantize: o.quantize, onProgress: o.onDraftProgress, signal: o.signal });
      await draft.warmup();
    }
  } catch (err) {
    draft?.destroy();
    runner.destroy();
    throw err;
  }
  return { runner, draft };
}

/** The runners of an opened model, with what the main thread is told about them. */
export interface LoadedModel {
  runner: Runner;
  draft?: Runner;
  info: ModelInfo;
}

/**
 * loadRunners, then the ModelInfo of what was loaded (`prefixCache`: whether the engine will cache prefixes; `reason`:
 * why the WebGPU kernels run it).
 * @example
 * const { runner, draft, info } = await loadModel(gpu, await openModels(open, source), { kvBudgetBytes: 128 << 20, maxBatch: 8 });
 */
export async function loadModel(gpu: Gpu, opened: OpenedModels, o: RunnersOptions & { prefixCache?: boolean; reason?: string }): Promise<LoadedModel> {
  const { runner, draft } = await loadRunners(gpu, opened.model, opened.draftModel, o);
  const info: ModelInfo = { ...describeModel(gpu, runner, opened.tokenizer, draft, o.reason), prefixCache: o.prefixCache !== false && runner.capabilities?.sharedPages !== false };
  // Qwen3.5: no prefix cache, and info says why (it stays exact: every request prefills its whole prompt)
  if (o.prefixCache !== false && !info.prefixCache) info.warnings = [...(info.warnings ?? []), `the prefix cache is off: ${noCacheAdvice(runner)}.`];
  return { runner, draft, info };
}

// ---- backends ----

/**
 * The backend that will run the model, why, and the GPU when it is intab's WebGPU kernels; an ORT backend may carry
 * the host's onnxruntime (`ort`: onnxruntime-node in Node) to run on instead of onnxruntime-web.
 */
export type BackendChoice = { name: 'webgpu'; reason: string; gpu: Gpu } | { name: 'onnx-wasm' | 'onnx-webgpu'; reason: string; ort?: OrtRuntime };

/**
 * Whether ORT's WebGPU build can run here: @intab/onnx loads its JSPI build for 'onnx-webgpu' (the asyncify one's
 * wasm is past static hosts' 25 MiB per-file limit), which needs WebAssembly.Suspending (Chromium 137+). @intab/onnx's
 * checkOrtBuild refuses the backend where this is false; it is restated here so that choosing does not import ORT's package.
 */
const jspi = (): boolean => typeof WebAssembly === 'object' && 'Suspending' in WebAssembly;

/**
 * Resolves LoadOptions.backend for a model: 'auto' takes intab's WebGPU kernels on a hardware adapter, and the CPU
 * ('onnx-wasm': intab's wasm kernels or ORT's, loadOnnxModel) where WebGPU is missing or only a software adapter exists
 * (measured: ORT wasm decodes stories260K several times faster than any WebGPU path over SwiftShader). An ONNX folder
 * runs on ORT only: on its WebGPU execution provider with a hardware adapter where WebAssembly JSPI exists, else on its
 * wasm. With `o.ort` (the host's onnxruntime:
 * onnxruntime-node in Node) the ORT backends run on it instead: its CPU provider where the browser's ORT runs wasm, its
 * WebGPU provider where it has one; `request` is then the host's WebGPU (Dawn).
 * @example
 * const choice = await chooseBackend(options.backend, opened.model);
 */
export async function chooseBackend(asked: Backend = 'auto', model?: ModelFiles, request: () => Promise<Gpu> = requestGpu, o: { ort?: OrtRuntime } = {}): Promise<BackendChoice> {
  const onnxFolder = model?.onnx !== undefined;
  const ort = o.ort ? { ort: o.ort } : {};
  /** What runs a model on the CPU, in the reasons: onnxruntime-web's wasm, or the host runtime's CPU provider. */
  const cpu = o.ort ? `${o.ort.name}'s ${o.ort.providers['onnx-wasm'] ?? 'CPU'} execution provider` : 'the CPU (wasm)';
  if (asked === 'onnx-wasm' || asked === 'onnx-webgpu') return { name: asked, reason: `backend '${asked}' was asked for${o.ort ? ` (on ${o.ort.name})` : ''}`, ...ort };
  if (asked === 'webgpu') {
    if (onnxFolder) throw new ModelSourceError(model!.onnx!.model.name, "an ONNX model runs on onnxruntime: load it with backend 'onnx-webgpu', 'onnx-wasm' or 'auto', or load the model's GGUF or safetensors on 'webgpu'");
    return { name: 'webgpu', reason: "backend 'webgpu' was asked for", gpu: await request() };
  }
  if (asked !== 'auto') throw new InvalidRequestError('backend', asked, "'auto', 'webgpu', 'onnx-webgpu' or 'onnx-wasm'");
  // Qwen3.5's Gated DeltaNet layers have no ONNX graph: they run on intab's kernels, whatever the adapter.
  const recurrent = model?.config.linearAttention ? `${model.config.arch}'s Gated DeltaNet layers run on intab's WebGPU kernels only (no ONNX graph writes them)` : undefined;
  let gpu: Gpu;
  try {
    gpu = await request();
  } catch (err) {
    if (recurrent) throw err;
    return { name: 'onnx-wasm', reason: `auto: WebGPU is unavailable here (${err instanceof Error ? err.message : String(err)}), so ${cpu} runs it`, ...ort };
  }
  const a = gpu.adapterInfo;
  const adapter = [a.vendor, a.architecture].filter(Boolean).join(' ') || a.device || a.description || 'unknown';
  if (recurrent && !onnxFolder) return { name: 'webgpu', reason: `auto: ${recurrent}, here on ${adapter}`, gpu };
  if (isSoftwareAdapter(a)) {
    gpu.destroy();
    return { name: 'onnx-wasm', reason: `auto: the only WebGPU adapter is a software one (${adapter}), where ${cpu} decodes faster`, ...ort };
  }
  if (onnxFolder) {
    gpu.destroy();
    if (o.ort && !o.ort.providers['onnx-webgpu']) return { name: 'onnx-wasm', reason: `auto: an ONNX model runs on onnxruntime, and ${o.ort.name} has no WebGPU execution provider here (hardware adapter ${adapter}), so ${cpu} runs it`, ...ort };
    if (!o.ort && !jspi()) return { name: 'onnx-wasm', reason: `auto: an ONNX model runs on onnxruntime, whose WebGPU build needs WebAssembly JSPI, which this browser lacks (hardware adapter ${adapter}), so its wasm runs it` };
    return { name: 'onnx-webgpu', reason: `auto: an ONNX model on a hardware WebGPU adapter (${adapter}) runs on ${o.ort?.name ?? 'onnxruntime'}'s WebGPU execution provider`, ...ort };
  }
  return { name: 'webgpu', reason: `auto: a hardware WebGPU adapter (${adapter})`, gpu };
}

/** The runners of a model on onnxruntime-web, with what the main thread is told about them. */
export interface LoadedOnnxModel {
  runner: StepRunner;
  draft?: StepRunner;
  info: ModelInfo;
}

/**
 * Loads the model (and its draft) on onnxruntime-web: an ONNX folder's graph, or one written from the checkpoint.
 * @example
 * const { runner, info } = await loadOnnxModel(opened, { name: 'onnx-wasm', reason: 'asked' }, { kvBudgetBytes: 64 << 20, maxBatch: 8 });
 */
export async function loadOnnxModel(opened: OpenedModels, backend: Exclude<BackendChoice, { name: 'webgpu' }>, o: RunnersOptions & { prefixCache?: boolean }): Promise<LoadedOnnxModel> {
  if (o.quantize) {
    throw new InvalidRequestError('quantize', o.quantize, `absent with backend '${backend.name}' (quantize re-quantizes weights for intab's WebGPU kernels; onnxruntime runs the checkpoint's own weights)`);
  }
  const onnx = await import('@intab/onnx');
  const options = { backend: backend.name, runtime: backend.ort, kvBudgetBytes: o.kvBudgetBytes, maxBatch: o.maxBatch, maxTokensPerStep: Math.max(o.maxTokensPerStep ?? 512, o.maxBatch), signal: o.signal };
  const load = async (model: ModelFiles, onProgress?: (p: LoadProgress) => void): Promise<{ runner: StepRunner; weightBytes: number; adapter: string; warnings: string[] }> => {
    if (onCpuKernels(model, backend, o.cpuKernels, onnx.cpuRunnable)) {
      const cpu = await onnx.loadCpuRunner(model, { ...options, onProgress, anyFormat: o.cpuKernels === 'intab', threads: o.cpuThreads });
      const r = cpu.requantized;
      const formats = [...new Set(r.map((n) => model.tensors.get(n)?.dtype))].join(', ');
      const warnings = r.length ? [`${r.length === 1 ? r[0] : `${r.length} matrices`} (${formats}) ${r.length === 1 ? 'was' : 'were'} re-quantized to q8_0 on load: intab's CPU kernels read q4_0 and q8_0 as stored.`] : [];
      if (o.cpuThreads !== undefined && o.cpuThreads > 1 && cpu.threads === 1) warnings.push(`cpuThreads ${o.cpuThreads}: intab's CPU kernels run on 1 thread, because ${cpu.threadsNote}.`);
      const threads = cpu.threads === 1 ? `1 thread${cpu.threadsNote ? `: ${cpu.threadsNote}` : ''}` : `${cpu.threads} threads`;
      return { runner: cpu.runner, weightBytes: cpu.weightBytes, adapter: `intab's wasm SIMD128 kernels (${cpu.dtypes}, ${threads})`, warnings };
    }
    const target = await onnx.loadOnnxRunner(model, { ...options, onProgress });
    const threads = `${target.threads} thread${target.threads === 1 ? '' : 's'}`;
    const { runtime, provider } = target.runs;
    const ep = provider === 'wasm' ? `wasm (${threads})` : provider === 'webgpu' ? `WebGPU EP${target.runner.kvLocation === 'gpu-buffer' ? ', K/V on the GPU' : ''}` : `${provider.toUpperCase()} EP (${threads})`;
    return { runner: target.runner, weightBytes: target.weightBytes, adapter: `${runtime} ${ep}; graph ${target.graph === 'built' ? 'written from the weights' : target.graph}`, warnings: [] };
  };
  const target = await load(opened.model, o.onProgress);
  let draft: Awaited<ReturnType<typeof load>> | undefined;
  try {
    if (opened.draftModel) draft = await load(opened.draftModel, o.onDraftProgress);
  } catch (err) {
    target.runner.destroy();
    throw err;
  }
  const info: ModelInfo = {
    backend: { name: backend.name, reason: backend.reason },
    ...(draft && opened.draftModel ? { draft: { arch: opened.draftModel.config.arch, layers: opened.draftModel.config.layers, hidden: opened.draftModel.config.hidden, weightBytes: draft.weightBytes } } : {}),
    ...modelFacts(opened.model.config, opened.tokenizer),
    weightBytes: target.weightBytes,
    kvPages: target.runner.kv.pages,
    adapter: target.adapter,
    prefixCache: o.prefixCache !== false,
    ...(target.warnings.length ? { warnings: target.warnings } : {}),
  };
  return { runner: target.runner, draft: draft?.runner, info };
}

/**
 * Whether a model on an ORT backend runs on intab's own CPU kernels instead: on 'onnx-wasm' in the browser (not on a
 * host's onnxruntime, whose native CPU provider has threads), where the kernels read its matrices as stored (q4_0 /
 * q8_0) or re-quantize a K-quant's to q8_0, unless `cpuKernels` says 'onnxruntime'. `cpuKernels: 'intab'` also takes
 * unquantized matrices (re-quantized to q8_0), and on a model the kernels cannot run is an error saying why.
 */
function onCpuKernels(model: ModelFiles, backend: Exclude<BackendChoice, { name: 'webgpu' }>, asked: RunnersOptions['cpuKernels'], runnable: (m: ModelFiles, o: { anyFormat?: boolean }) => string | undefined): boolean {
  if (asked === 'onnxruntime') return false;
  const why = backend.name !== 'onnx-wasm' ? `backend '${backend.name}' runs on the GPU` : backend.ort && asked !== 'intab' ? `${backend.ort.name} runs it natively` : runnable(model, { anyFormat: asked === 'intab' });
  if (why && asked === 'intab') throw new InvalidRequestError('cpuKernels', 'intab', `'onnxruntime' or absent for this model: intab's CPU kernels cannot run it (${why})`);
  return why === undefined;
}

/** An embedding model's encoder on its backend, with what the main thread is told about it. */
export interface LoadedEncoder {
  encoder: EncoderRunner;
  tokenizer?: Tokenizer;
  info: ModelInfo;
}

/**
 * Loads an embedding model or reranker on the chosen backend: an encoder (EncoderFiles: bert, nomic-bert) on intab's
 * WebGPU kernels (arch/bert.ts) or onnxruntime (an encoder graph written from the weights); a decoder trained to embed
 * (DecoderEmbeddingFiles: Qwen3-Embedding, EmbeddingGemma) on intab's kernels (arch/decoder-embed.ts) or onnxruntime
 * (the Llama-family graph's final-norm states, pooled and projected). It embeds one short input so that the first
 * request does not pay for compiling pipelines.
 * @example
 * const { encoder, info } = await loadEncoderModel(files, await chooseBackend('auto'), { signal });
 */
export async function loadEncoderModel(files: EmbeddingModelFiles, backend: BackendChoice, o: { quantize?: 'q8_0' | 'q4_0'; maxTokensPerPass?: number; signal?: AbortSignal } = {}): Promise<LoadedEncoder> {
  const tokenizer = openTokenizer(files);
  let encoder: EncoderRunner;
  let adapter: string;
  if (backend.name === 'webgpu') {
    const { gpu } = backend;
    const options = { quantize: o.quantize, signal: o.signal, maxTokensPerPass: o.maxTokensPerPass };
    encoder = isEncoderFiles(files) ? await createBertRunner(gpu, files.config, files.tensors, options) : await createDecoderEmbedRunner(gpu, files.config, files.tensors, options);
    adapter = [gpu.adapterInfo.vendor, gpu.adapterInfo.architecture, gpu.adapterInfo.description].filter(Boolean).join(' ');
  } else {
    if (o.quantize) throw new InvalidRequestError('quantize', o.quantize, `absent with backend '${backend.name}' (quantize re-quantizes weights for intab's WebGPU kernels)`);
    const { loadOnnxEncoder, loadOnnxDecoderEncoder } = await import('@intab/onnx');
    const options = { backend: backend.name, runtime: backend.ort, signal: o.signal, maxTokensPerPass: o.maxTokensPerPass };
    const loaded = isEncoderFiles(files) ? await loadOnnxEncoder(files, options) : await loadOnnxDecoderEncoder(files, options);
    encoder = loaded.runner;
    const graph = isEncoderFiles(files) ? 'encoder graph' : 'states graph';
    adapter = `${loaded.runs.runtime} ${loaded.runs.provider === 'wasm' ? `wasm (${loaded.threads} thread${loaded.threads === 1 ? '' : 's'})` : loaded.runs.provider}; ${graph} written from the weights`;
  }
  const facts = encoder.facts;
  try {
    // Warm-up: every pipeline (or ORT kernel) compiled before the first request.
    await encoder.encode([[0, 0]]);
  } catch (err) {
    encoder.destroy();
    throw err;
  }
  const info: ModelInfo = {
    backend: { name: backend.name, reason: backend.reason },
    arch: facts.arch,
    layers: facts.layers,
    hidden: facts.hidden,
    vocab: facts.vocab,
    contextLength: facts.contextLength,
    hasTokenizer: tokenizer !== undefined,
    hasChatTemplate: false,
    toolFormat: null,
    weightBytes: encoder.weightBytes,
    kvPages: 0,
    adapter,
    // A reranker's outputs are scores, not an embedding.
    ...(facts.classifier ? { rerank: { labels: [...facts.classifier.labels] } } : { embedding: { dimensions: facts.dimensions, pooling: facts.pooling, normalized: facts.normalized, matryoshka: facts.matryoshka } }),
    ...(files.warnings?.length ? { warnings: [...files.warnings] } : {}),
  };
  return { encoder, tokenizer, info };
}

/**
 * The model on the chosen backend: intab's kernels (loadModel) or onnxruntime (loadOnnxModel). `quantize` re-quantizes for
 * intab's kernels: asked together with an ONNX backend it is an error, but when 'auto' (`asked`) chose ORT (no hardware
 * GPU here) it is dropped with a warning, so a page written for WebGPU still loads.
 * @example
 * const { runner, info } = await loadOnBackend(await chooseBackend(asked, opened.model), opened, { kvBudgetBytes, maxBatch, asked });
 */
export async function loadOnBackend(backend: BackendChoice, opened: OpenedModels, o: RunnersOptions & { prefixCache?: boolean; asked?: Backend }): Promise<LoadedModel | LoadedOnnxModel> {
  const dropped = backend.name !== 'webgpu' && (o.asked ?? 'auto') === 'auto' ? o.quantize : undefined;
  const loaded =
    backend.name === 'webgpu'
      ? await loadModel(backend.gpu, opened, { ...o, reason: backend.reason })
      : await loadOnnxModel(opened, backend, { ...o, quantize: dropped ? undefined : o.quantize });
  // What the files' own readers noticed (a GGUF key in another type than the spec's), then what this load set aside.
  const warnings = [...(opened.model.warnings ?? []), ...(dropped ? [`quantize '${dropped}' was ignored: it applies to intab's WebGPU kernels, and this load runs on ${backend.name}.`] : [])];
  if (warnings.length) loaded.info.warnings = [...(loaded.info.warnings ?? []), ...warnings];
  return loaded;
}

