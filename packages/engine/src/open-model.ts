// Opening a model for the engine: the files behind a ModelSource (a GGUF file or its splits, a Hugging Face folder,
// by URL or as blobs; URLs through model-fetch.ts, as the model store fetches them), what the main thread is told
// about a loaded model, and the check that a draft model shares the target's tokenizer.

import { formatBytes, type Gpu } from '@intab/gpu';
import { UnsupportedModelError, blobSource, fileBaseName, openAnyGguf, openAnyHfFolder, openOnnxFolder, urlSource, type AnyModelFiles, type ByteSource, type LlamaConfig, type ModelFiles, type Runner, type Tokenizer } from '@intab/model';
import type { ModelInfo, ModelSource } from './contract.ts';
import { DraftMismatchError, ModelSourceError } from './errors.ts';
import { listModelFolder, modelFetch } from './model-fetch.ts';
import { detectToolFormat } from './tools/formats.ts';

const isGguf = (name: string) => /\.gguf$/i.test(fileBaseName(name.split(/[?#]/)[0]));
const isOnnx = (name: string) => /\.onnx$/i.test(name.split(/[?#]/)[0]);

/**
 * The model files behind a ModelSource: GGUF (one file or splits), a Hugging Face folder, or an ONNX folder
 * (onnx/model*.onnx); a text generator's (ModelFiles) or an embedding model's encoder (EncoderFiles: isEncoderFiles).
 * URLs are fetched through modelFetch (a failure is the same typed error as the model store's), and a folder URL asks
 * only for the files its layout implies (listModelFolder).
 */
export async function openModel(source: ModelSource, signal?: AbortSignal): Promise<AnyModelFiles> {
  const fetch = modelFetch();
  const open = (url: string) => urlSource(url, { fetch, signal });
  switch (source.kind) {
    case 'url': {
      if (!source.url.endsWith('/')) return openAnyGguf(await open(source.url), { signal });
      const { kind, files, probed } = await listModelFolder(source.url, open, { signal });
      const found = new Map<string, ByteSource>(await Promise.all(files.map(async (f) => [f.name, probed.get(f.name) ?? (await open(f.url))] as const)));
      return kind === 'onnx' ? openOnnxFolder(found, { signal }) : openAnyHfFolder(found, { signal });
    }
    case 'hf-urls': {
      const names = Object.keys(source.files);
      const ggufs = names.filter(isGguf);
      if (ggufs.length) return openAnyGguf(await Promise.all(ggufs.map((n) => open(source.files[n]))), { signal });
      const found = new Map<string, ByteSource>();
      // ONNX folders keep their names (onnx/model.onnx): external data is found beside the graph.
      const onnx = names.some(isOnnx);
      await Promise.all(names.map(async (n) => found.set(onnx ? n : fileBaseName(n), await open(source.files[n]))));
      if (onnx) return openOnnxFolder(found, { signal });
      return openAnyHfFolder(found, { signal });
    }
    case 'files': {
      const ggufs = source.files.filter((f) => isGguf(f.name));
      if (ggufs.length) return openAnyGguf(ggufs.map((f) => blobSource(f.blob, f.name)), { signal });
      if (!source.files.some((f) => fileBaseName(f.name) === 'config.json')) {
        throw new ModelSourceError(`${source.files.length} files`, 'there is no .gguf file and no config.json among them: pick a GGUF file, a Hugging Face model folder or an ONNX folder');
      }
      const files = new Map(source.files.map((f) => [f.name, blobSource(f.blob, f.name)]));
      return source.files.some((f) => isOnnx(f.name)) ? openOnnxFolder(files, { signal }) : openAnyHfFolder(files, { signal });
    }
    default:
      throw new ModelSourceError(JSON.stringify(source), "its kind is not 'url', 'hf-urls' or 'files'");
  }
}

/** What ModelInfo says of a model's own shape and files, whatever runs it. */
export function modelFacts(c: LlamaConfig, tokenizer: Tokenizer | undefined): Pick<ModelInfo, 'arch' | 'layers' | 'hidden' | 'vocab' | 'contextLength' | 'hasTokenizer' | 'hasChatTemplate' | 'toolFormat'> {
  return {
    arch: c.arch,
    layers: c.layers,
    hidden: c.hidden,
    vocab: c.vocab,
    contextLength: c.maxContext,
    hasTokenizer: tokenizer !== undefined,
    hasChatTemplate: tokenizer?.chatTemplate !== undefined,
    toolFormat: detectToolFormat(tokenizer?.chatTemplate, tokenizer?.addedTokens.map((t) => t.content)),
  };
}

/** What the main thread is told about a model loaded on intab's WebGPU kernels (`reason`: why that backend). */
export function describeModel(gpu: Gpu, runner: Runner, tokenizer: Tokenizer | undefined, draft?: Runner, reason = "backend 'webgpu' was asked for"): ModelInfo {
  const kv = runner.kv;
  const { limit } = kv.budget;
  return {
    backend: { name: 'webgpu', reason },
    ...(draft ? { draft: { arch: draft.config.arch, layers: draft.config.layers, hidden: draft.config.hidden, weightBytes: draft.weights.bytes } } : {}),
    ...modelFacts(runner.config, tokenizer),
    weightBytes: runner.weights.bytes,
    kvPages: kv.pages,
    kvBudget: { ...kv.budget },
    adapter: [gpu.adapterInfo.vendor, gpu.adapterInfo.architecture, gpu.adapterInfo.description].filter(Boolean).join(' '),
    ...(limit
      ? {
          warnings: [
            `kvBudgetBytes was clamped from ${formatBytes(kv.budget.asked)} to ${formatBytes(kv.budget.granted)} (${kv.pages} pages of ${kv.pageSize} tokens): ` +
              `one layer's K or V may not pass this adapter's ${limit} of ${formatBytes(gpu.limits[limit])}.`,
          ],
        }
      : {}),
  };
}

/**
 * A draft must share the target's tokenizer: the same vocabulary size, and when both carry a tokenizer the
 * same tokens under the same ids. Anything else would verify garbage, so it is refused at load.
 */
export function checkDraft(target: ModelFiles, targetTokenizer: Tokenizer | undefined, draft: ModelFiles, draftTokenizer: Tokenizer | undefined): void {
  if (target.config.vocab !== draft.config.vocab) throw new DraftMismatchError('vocabulary size', String(target.config.vocab), String(draft.config.vocab));
  if (draft.config.linearAttention) {
    const file = [...draft.tensors.values()][0]?.source.name ?? 'draft model';
    throw new UnsupportedModelError(file, 'general.architecture', draft.config.arch, "a draft model is rewound across several of its own steps, which its Gated DeltaNet layers' recurrent state cannot be: use a Llama-family draft model, or ngram speculation");
  }
  if (!targetTokenizer || !draftTokenizer) return;
  const vocabOf = (t: Tokenizer) => JSON.stringify((t.json as { model?: { vocab?: unknown } }).model?.vocab ?? null);
  if (vocabOf(targetTokenizer) !== vocabOf(draftTokenizer)) throw new DraftMismatchError('tokenizer vocabulary', targetTokenizer.file, draftTokenizer.file);
  const added = (t: Tokenizer) => JSON.stringify(t.addedTokens.map((a) => [a.id, a.content]));
  if (added(targetTokenizer) !== added(draftTokenizer)) throw new DraftMismatchError('added (special) tokens', targetTokenizer.file, draftTokenizer.file);
}
