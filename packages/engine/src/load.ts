// Putting a model (and the draft model that speculates for it) on the GPU: its files opened and checked against each
// other (openModels), weights uploaded, every pipeline compiled (warm-up, so the first request does not pay for shader
// compilation), and the draft's KV-cache sized like the target's (loadRunners), then described for the main thread
// (loadModel). The engine's load() and the CLI (its page and --runtime node) both load through here.

import type { Gpu } from '@intab/gpu';
import { openTokenizer, Runner, type LoadProgress, type ModelFiles, type Tokenizer } from '@intab/model';
import type { ModelInfo } from './contract.ts';
import { checkDraft, describeModel } from './open-model.ts';

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
 * loadRunners, then the ModelInfo of what was loaded (`prefixCache`: whether the engine will cache prefixes).
 * @example
 * const { runner, draft, info } = await loadModel(gpu, await openModels(open, source), { kvBudgetBytes: 128 << 20, maxBatch: 8 });
 */
export async function loadModel(gpu: Gpu, opened: OpenedModels, o: RunnersOptions & { prefixCache?: boolean }): Promise<LoadedModel> {
  const { runner, draft } = await loadRunners(gpu, opened.model, opened.draftModel, o);
  return { runner, draft, info: { ...describeModel(gpu, runner, opened.tokenizer, draft), prefixCache: o.prefixCache !== false } };
}
