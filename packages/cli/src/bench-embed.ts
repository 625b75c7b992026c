// `intab bench embed`: embedding throughput of an embedding model (a bert / nomic-bert GGUF) on the engine in this
// process (the Node runtime, as `intab serve --runtime node` loads it: intab's kernels on Dawn where Dawn finds a
// hardware adapter, else onnxruntime-node's CPU provider), against llama.cpp natively on this CPU (node-llama-cpp, the
// same GGUF), for batches of 1, 8 and 32 texts: inputs per second and tokens per second, medians over repeats, and
// intab's ratio to llama.cpp. The texts are the embedding tests' 20 (one word to ~150 tokens), in turn.
// llama.cpp's embedding context takes one text at a time: its batch of N is N texts one after another (what an app
// gets from node-llama-cpp); intab's is one request of N inputs (packed into the encoder's passes).
// JSON lines (--json): one per system and batch, then one per batch with the ratio; a table without --json.
import { EMBED_INPUTS } from '@intab/testing/embed-inputs';
import { wholeFlag, type Flags } from './args.ts';
import { round } from './grammar-stats.ts';
import { median } from './bench-tools.ts';
import { resolveModel, type ResolvedModel } from './model-files.ts';

export interface BenchEmbedOptions {
  model: ResolvedModel;
  json: boolean;
  batches: number[];
  repeats: number;
  backend: 'auto' | 'webgpu' | 'onnx-wasm';
  /** Threads of llama.cpp and of onnxruntime-node [1: a fair comparison of one core each]. */
  threads: number;
  /** Skip llama.cpp (--no-native). */
  native: boolean;
}

const BACKENDS = ['auto', 'webgpu', 'onnx-wasm'];

export function benchEmbedOptions(flags: Flags): BenchEmbedOptions {
  if (typeof flags.model !== 'string') throw new Error('--model <embedding GGUF> is required (e.g. intab make-model --like all-minilm-l6 --dtype f32 --out /tmp/minilm.gguf)');
  const backend = flags.backend ?? 'auto';
  if (typeof backend !== 'string' || !BACKENDS.includes(backend)) throw new Error(`--backend takes ${BACKENDS.join(', ')} (the Node runtime's)`);
  const batchText = typeof flags.batch === 'string' ? flags.batch : '1,8,32';
  const batches = batchText.split(',').map((b) => Number(b.trim()));
  if (!batches.length || batches.some((b) => !Number.isInteger(b) || b < 1 || b > 2048)) throw new Error(`--batch takes a comma-separated list of whole numbers in [1, 2048], e.g. 1,8,32 (not ${batchText})`);
  return {
    model: resolveModel(flags.model),
    json: Boolean(flags.json),
    batches,
    repeats: wholeFlag(flags, 'repeats', 3, 1, 50),
    backend: backend as BenchEmbedOptions['backend'],
    threads: wholeFlag(flags, 'threads', 1, 1, 64),
    native: flags['no-native'] === undefined,
  };
}

/** `n` texts: the tests' 20 in turn, each numbered so that no two are the same. */
export function benchTexts(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${i + 1}. ${EMBED_INPUTS[i % EMBED_INPUTS.length]}`);
}

interface Figure {
  system: string;
  batch: number;
  ms: number;
  inputs_per_s: number;
  tokens_per_s: number;
  tokens: number;
}

/** The engine in this process: its backend's name and embed(). */
async function intabHere(o: BenchEmbedOptions): Promise<{ name: string; facts: Record<string, unknown>; embed(texts: string[]): Promise<{ tokens: number }>; close(): Promise<void> }> {
  const { Engine, loadEncoderModel } = await import('@intab/engine');
  const { isEncoderFiles } = await import('@intab/model');
  const { openAnyOnDisk } = await import('../node/model-source.ts');
  const { chooseNodeBackend } = await import('../node/backend.ts');
  const files = await openAnyOnDisk(o.model);
  if (!isEncoderFiles(files)) throw new Error(`${o.model.files[0] ?? o.model.urls[0]} is a text model (${files.config.arch}): bench embed takes an embedding model (bert, nomic-bert), e.g. intab make-model --like all-minilm-l6`);
  const choice = await chooseNodeBackend(o.backend, undefined, { threads: o.threads });
  const t0 = performance.now();
  const { encoder, tokenizer, info } = await loadEncoderModel(files, choice);
  const engine = new Engine({ encoder, tokenizer, info });
  return {
    name: `intab/${info.backend.name}`,
    facts: { backend: info.backend.name, adapter: info.adapter, arch: info.arch, layers: info.layers, hidden: info.hidden, load_ms: round(performance.now() - t0) },
    embed: async (texts) => ({ tokens: (await engine.embed({ input: texts, truncate: true })).promptTokens }),
    async close() {
      await engine.destroy();
      if (choice.name === 'webgpu') choice.gpu.destroy();
    },
  };
}

/** llama.cpp natively (node-llama-cpp's CPU build), the texts one by one in one embedding context. */
async function llamaCppHere(o: BenchEmbedOptions): Promise<{ name: string; embed(texts: string[]): Promise<{ tokens: number }>; close(): Promise<void> }> {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: o.model.dir ? `${o.model.dir}/${o.model.files[0]}` : o.model.files[0] });
  const context = await model.createEmbeddingContext({ contextSize: Math.min(model.trainContextSize, 2048), batchSize: Math.min(model.trainContextSize, 2048), threads: o.threads });
  return {
    name: 'llama.cpp/cpu',
    async embed(texts) {
      let tokens = 0;
      for (const t of texts) {
        tokens += model.tokenize(t).length + 2;
        await context.getEmbeddingFor(t);
      }
      return { tokens };
    },
    async close() {
      await context.dispose();
      await model.dispose();
    },
  };
}

/** `repeats` timed runs of each batch (after one untimed), medians. */
async function measure(system: { name: string; embed(texts: string[]): Promise<{ tokens: number }> }, o: BenchEmbedOptions): Promise<Figure[]> {
  const out: Figure[] = [];
  await system.embed(benchTexts(2)); // warm-up: what happens once (pipelines, ORT kernels, allocations)
  for (const batch of o.batches) {
    const texts = benchTexts(batch);
    const ms: number[] = [];
    let tokens = 0;
    for (let r = 0; r < o.repeats; r++) {
      const t0 = performance.now();
      tokens = (await system.embed(texts)).tokens;
      ms.push(performance.now() - t0);
    }
    const m = median(ms);
    out.push({ system: system.name, batch, ms: round(m), inputs_per_s: round((batch * 1000) / m), tokens_per_s: round((tokens * 1000) / m), tokens });
  }
  return out;
}

const COLUMNS = ['system', 'batch', 'inputs_per_s', 'tokens_per_s', 'ms'];

export async function benchEmbed(flags: Flags): Promise<number> {
  const o = benchEmbedOptions(flags);
  const print = (r: Record<string, unknown>) => console.log(o.json ? JSON.stringify({ bench: 'embed', ...r }) : COLUMNS.map((c) => `${c}=${r[c] ?? '-'}`).join('\t'));
  const intab = await intabHere(o);
  let ours: Figure[];
  try {
    ours = await measure(intab, o);
  } finally {
    await intab.close();
  }
  for (const f of ours) print({ ...f, ...intab.facts });
  if (!o.native) return 0;
  const native = await llamaCppHere(o);
  let theirs: Figure[];
  try {
    theirs = await measure(native, o);
  } finally {
    await native.close();
  }
  for (const f of theirs) print({ ...f, threads: o.threads });
  for (const f of ours) {
    const t = theirs.find((x) => x.batch === f.batch)!;
    print({ kind: 'ratio', batch: f.batch, system: f.system, versus: t.system, inputs_per_s_ratio: round(f.inputs_per_s / t.inputs_per_s), tokens_equal: f.tokens === t.tokens });
  }
  return 0;
}
