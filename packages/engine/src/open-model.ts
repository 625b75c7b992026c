// Opening a model for the engine: the files behind a ModelSource (a GGUF file or its splits, a Hugging Face folder,
// by URL or as blobs), what the main thread is told about a loaded model, and the check that a draft model shares
// the target's tokenizer.

import { formatBytes, type Gpu } from '@intab/gpu';
import { blobSource, fileBaseName, openGguf, openHfFolder, openOnnxFolder, urlSource, type ByteSource, type LlamaConfig, type ModelFiles, type Runner, type Tokenizer } from '@intab/model';
import type { ModelInfo, ModelSource } from './contract.ts';
import { DraftMismatchError, ModelSourceError } from './errors.ts';

const HF_FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors.index.json', 'model.safetensors'];
const isGguf = (name: string) => /\.gguf$/i.test(fileBaseName(name.split(/[?#]/)[0]));
const isOnnx = (name: string) => /\.onnx$/i.test(name.split(/[?#]/)[0]);
/** The graph and external data files of an ONNX folder URL, tried in this order when nothing lists the folder. */
const ONNX_URL_FILES = ['onnx/model.onnx', 'onnx/model.onnx_data'];

/** The model files behind a ModelSource: GGUF (one file or splits), a Hugging Face folder, or an ONNX folder (onnx/model*.onnx). */
export async function openModel(source: ModelSource, signal?: AbortSignal): Promise<ModelFiles> {
  switch (source.kind) {
    case 'url': {
      if (!source.url.endsWith('/')) return openGguf(await urlSource(source.url, { signal }), { signal });
      // A folder URL: fetch what exists of the usual Hugging Face files (and of an ONNX folder's).
      const found = new Map<string, ByteSource>();
      await Promise.all(
        [...HF_FILES, ...ONNX_URL_FILES].map(async (name) => {
          try {
            found.set(name, await urlSource(new URL(name, source.url).href, { signal }));
          } catch (err) {
            if (name === 'config.json' || signal?.aborted) throw err;
          }
        }),
      );
      if (found.has('onnx/model.onnx') && !found.has('model.safetensors')) return openOnnxFolder(found, { signal });
      return openHfUrls(found, (name) => new URL(name, source.url).href, signal);
    }
    case 'hf-urls': {
      const names = Object.keys(source.files);
      const ggufs = names.filter(isGguf);
      if (ggufs.length) return openGguf(await Promise.all(ggufs.map((n) => urlSource(source.files[n], { signal }))), { signal });
      const found = new Map<string, ByteSource>();
      // ONNX folders keep their names (onnx/model.onnx): external data is found beside the graph.
      const onnx = names.some(isOnnx);
      await Promise.all(names.map(async (n) => found.set(onnx ? n : fileBaseName(n), await urlSource(source.files[n], { signal }))));
      if (onnx) return openOnnxFolder(found, { signal });
      return openHfUrls(found, undefined, signal);
    }
    case 'files': {
      const ggufs = source.files.filter((f) => isGguf(f.name));
      if (ggufs.length) return openGguf(ggufs.map((f) => blobSource(f.blob, f.name)), { signal });
      if (!source.files.some((f) => fileBaseName(f.name) === 'config.json')) {
        throw new ModelSourceError(`${source.files.length} files`, 'there is no .gguf file and no config.json among them: pick a GGUF file, a Hugging Face model folder or an ONNX folder');
      }
      const files = new Map(source.files.map((f) => [f.name, blobSource(f.blob, f.name)]));
      return source.files.some((f) => isOnnx(f.name)) ? openOnnxFolder(files, { signal }) : openHfFolder(files);
    }
    default:
      throw new ModelSourceError(JSON.stringify(source), "its kind is not 'url', 'hf-urls' or 'files'");
  }
}

/** A Hugging Face folder over URLs; shards named by model.safetensors.index.json are fetched as needed. */
async function openHfUrls(found: Map<string, ByteSource>, urlOf: ((name: string) => string) | undefined, signal?: AbortSignal): Promise<ModelFiles> {
  const index = found.get('model.safetensors.index.json');
  if (index && urlOf) {
    const json = JSON.parse(new TextDecoder().decode(await index.read(0, index.size, signal))) as { weight_map?: Record<string, string> };
    const shards = [...new Set(Object.values(json.weight_map ?? {}))].filter((s) => !found.has(s));
    await Promise.all(shards.map(async (s) => found.set(s, await urlSource(urlOf(s), { signal }))));
  }
  return openHfFolder(found);
}

/** What ModelInfo says of a model's own shape and files, whatever runs it. */
export function modelFacts(c: LlamaConfig, tokenizer: Tokenizer | undefined): Pick<ModelInfo, 'arch' | 'layers' | 'hidden' | 'vocab' | 'contextLength' | 'hasTokenizer' | 'hasChatTemplate'> {
  return {
    arch: c.arch,
    layers: c.layers,
    hidden: c.hidden,
    vocab: c.vocab,
    contextLength: c.maxContext,
    hasTokenizer: tokenizer !== undefined,
    hasChatTemplate: tokenizer?.chatTemplate !== undefined,
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
  if (!targetTokenizer || !draftTokenizer) return;
  const vocabOf = (t: Tokenizer) => JSON.stringify((t.json as { model?: { vocab?: unknown } }).model?.vocab ?? null);
  if (vocabOf(targetTokenizer) !== vocabOf(draftTokenizer)) throw new DraftMismatchError('tokenizer vocabulary', targetTokenizer.file, draftTokenizer.file);
  const added = (t: Tokenizer) => JSON.stringify(t.addedTokens.map((a) => [a.id, a.content]));
  if (added(targetTokenizer) !== added(draftTokenizer)) throw new DraftMismatchError('added (special) tokens', targetTokenizer.file, draftTokenizer.file);
}
