// `intab bench embed`: embedding throughput of an embedding model (a bert / nomic-bert GGUF) on the engine in this
// process (the Node runtime, as `intab serve --runtime node` loads it: intab's kernels on Dawn where Dawn finds a
// hardware adapter, else onnxruntime-node's CPU provider), against transformers.js in this process (its
// feature-extraction pipeline on the same weights, written as a Hugging Face encoder export: onnxruntime-node's CPU
// provider, intab's Node CPU backend, with the same session options) and llama.cpp natively on this CPU
// (node-llama-cpp, the same GGUF), for batches of 1, 8 and 32 texts: inputs per second and tokens per second, medians
// over repeats, and intab's ratio to each. The texts are the embedding tests' 20 (one word to ~150 tokens), in turn.
// Before a ratio to transformers.js is quoted, its vectors and token counts are checked against intab's on the texts
// timed (vectors_match: the least cosine). llama.cpp's embedding context takes one text at a time: its batch of N is
// N texts one after another (what an app gets from node-llama-cpp); intab's is one request of N inputs (packed into
// the encoder's passes), transformers.js's one pipeline call (padded to the longest text).
// JSON lines (--json): one per system and batch, then one per batch and peer with the ratio; a table without --json.
// --runtime chromium runs intab and transformers.js in one headless Chromium page instead (bench-embed-page.ts and
// page/bench-embed.ts): intab through its public createEngine on the backend asked (onnxruntime-web's wasm or WebGPU
// execution provider, or intab's WebGPU kernels), transformers.js's pipeline on the same graph on device wasm or
// webgpu; llama.cpp still runs natively here after the page. Every line says where it ran ("host": node or chromium).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EMBED_INPUTS, cosine } from '@intab/testing/embed-inputs';
import { wholeFlag, type Flags } from './args.ts';
import { round } from './grammar-stats.ts';
import { median } from './bench-tools.ts';
import { resolveModel, type ResolvedModel } from './model-files.ts';
import type { EmbeddingModelFiles, EncoderFiles } from '@intab/model';

export interface BenchEmbedOptions {
  model: ResolvedModel;
  json: boolean;
  batches: number[];
  repeats: number;
  /** Where intab and transformers.js run: this process ('node'), or one headless Chromium page ('chromium'). */
  runtime: 'node' | 'chromium';
  /** intab's backend (the runtime's: onnx-webgpu is Chromium's only). */
  backend: 'auto' | 'webgpu' | 'onnx-wasm' | 'onnx-webgpu';
  /** Threads of llama.cpp and of onnxruntime-node [1: a fair comparison of one core each]; the page's wasm runs one. */
  threads: number;
  /** Seconds the page may take (--runtime chromium) [1800]. */
  timeoutS: number;
  /** intab's engine in its Worker, as createEngine does by default (--runtime chromium; --no-worker: on the page's thread). */
  worker: boolean;
  /** Skip llama.cpp (--no-native). */
  native: boolean;
  /** Skip transformers.js (--no-transformers). */
  transformers: boolean;
}

/** The backends of each runtime: the Node runtime's (onnx-wasm: onnxruntime-node's CPU provider) and the page's. */
const BACKENDS = { node: ['auto', 'webgpu', 'onnx-wasm'], chromium: ['auto', 'onnx-wasm', 'onnx-webgpu', 'webgpu'] };

/** Flags of `intab bench embed` (`runtime`: --runtime, which main.ts reads). */
export function benchEmbedOptions(flags: Flags, runtime: 'node' | 'chromium' = 'node'): BenchEmbedOptions {
  if (typeof flags.model !== 'string') throw new Error('--model <embedding GGUF> is required (e.g. intab make-model --like all-minilm-l6 --dtype f32 --out /tmp/minilm.gguf)');
  const backend = flags.backend ?? 'auto';
  if (runtime === 'node' && flags['no-worker'] !== undefined) throw new Error('--no-worker goes with --runtime chromium (createEngine\'s Worker in the page); the Node runtime runs the engine in this process');
  if (typeof backend !== 'string' || !BACKENDS[runtime].includes(backend)) {
    throw new Error(`--backend takes ${BACKENDS[runtime].join(', ')} with --runtime ${runtime}${runtime === 'node' ? ' (onnx-webgpu and the page\'s backends: --runtime chromium)' : ''}`);
  }
  const batchText = typeof flags.batch === 'string' ? flags.batch : '1,8,32';
  const batches = batchText.split(',').map((b) => Number(b.trim()));
  if (!batches.length || batches.some((b) => !Number.isInteger(b) || b < 1 || b > 2048)) throw new Error(`--batch takes a comma-separated list of whole numbers in [1, 2048], e.g. 1,8,32 (not ${batchText})`);
  return {
    model: resolveModel(flags.model),
    json: Boolean(flags.json),
    batches,
    repeats: wholeFlag(flags, 'repeats', 3, 1, 50),
    runtime,
    backend: backend as BenchEmbedOptions['backend'],
    threads: wholeFlag(flags, 'threads', 1, 1, 64),
    timeoutS: wholeFlag(flags, 'timeout', 1800, 1, 86_400),
    worker: flags['no-worker'] === undefined,
    native: flags['no-native'] === undefined,
    transformers: flags['no-transformers'] === undefined,
  };
}

/** `n` texts: the tests' 20 in turn, each numbered so that no two are the same. */
export function benchTexts(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${i + 1}. ${EMBED_INPUTS[i % EMBED_INPUTS.length]}`);
}

export interface Figure {
  system: string;
  batch: number;
  ms: number;
  inputs_per_s: number;
  tokens_per_s: number;
  tokens: number;
}

/** What a system's vectors are checked against: intab's, for the texts timed. */
interface Vectors {
  embeddings: Float32Array[];
  /** Tokens of each text. */
  tokens: number[];
}

/** The engine in this process: its backend's name, embed() and the vectors themselves. */
async function intabHere(o: BenchEmbedOptions): Promise<{ name: string; facts: Record<string, unknown>; files: EmbeddingModelFiles; embed(texts: string[]): Promise<{ tokens: number }>; vectors(texts: string[]): Promise<Vectors>; close(): Promise<void> }> {
  const { Engine, loadEncoderModel } = await import('@intab/engine');
  const { isEmbeddingModelFiles } = await import('@intab/model');
  const { openAnyOnDisk } = await import('../node/model-source.ts');
  const { chooseNodeBackend } = await import('../node/backend.ts');
  const files = await openAnyOnDisk(o.model);
  if (!isEmbeddingModelFiles(files)) throw new Error(`${o.model.files[0] ?? o.model.urls[0]} is a text model (${files.config.arch}): bench embed takes an embedding model (bert, nomic-bert, or a decoder trained to embed: qwen3 with a pooling type, gemma-embedding), e.g. intab make-model --like all-minilm-l6`);
  const choice = await chooseNodeBackend(o.backend, undefined, { threads: o.threads });
  const t0 = performance.now();
  const { encoder, tokenizer, info } = await loadEncoderModel(files, choice);
  const engine = new Engine({ encoder, tokenizer, info });
  return {
    name: `intab/${info.backend.name}`,
    facts: { backend: info.backend.name, adapter: info.adapter, arch: info.arch, layers: info.layers, hidden: info.hidden, load_ms: round(performance.now() - t0) },
    files,
    embed: async (texts) => ({ tokens: (await engine.embed({ input: texts, truncate: true })).promptTokens }),
    async vectors(texts) {
      const r = await engine.embed({ input: texts, truncate: true });
      return { embeddings: r.embeddings, tokens: r.tokens ?? [] };
    },
    async close() {
      await engine.destroy();
      if (choice.name === 'webgpu') choice.gpu.destroy();
    },
  };
}

/**
 * transformers.js in this process on the same weights (transformers-embed.ts: the encoder written to a temporary
 * folder as a Hugging Face export, its feature-extraction pipeline on onnxruntime-node's CPU provider with intab's Node
 * session options and --threads threads), checked against intab's vectors of the texts timed before it is measured.
 */
async function transformersHere(o: BenchEmbedOptions, files: EncoderFiles, ours: { texts: string[]; vectors: Vectors }): Promise<{ name: string; facts: Record<string, unknown>; vectorsMatch: number; tokensEqual: boolean; embed(texts: string[]): Promise<{ tokens: number }>; close(): Promise<void> }> {
  const { openTransformersEmbedder, writeTransformersFolder } = await import('./transformers-embed.ts');
  const { nodeOrt } = await import('../node/ort.ts');
  const dir = mkdtempSync(join(tmpdir(), 'intab-bench-embed-'));
  try {
    const t0 = performance.now();
    await writeTransformersFolder(files, dir);
    const write_ms = round(performance.now() - t0);
    const runtime = nodeOrt({ threads: o.threads });
    const t1 = performance.now();
    const t = await openTransformersEmbedder(dir, { threads: o.threads, sessionOptions: runtime.sessionOptions as Record<string, unknown> });
    const load_ms = round(performance.now() - t1);
    rmSync(dir, { recursive: true, force: true }); // the session holds the graph
    const counts = new Map<string, number>(ours.texts.map((text) => [text, t.tokens([text])[0]]));
    const theirs = await t.embed(ours.texts);
    const vectorsMatch = Math.min(...theirs.map((v, i) => cosine(v, ours.vectors.embeddings[i])));
    const tokensEqual = ours.texts.every((text, i) => counts.get(text) === ours.vectors.tokens[i]);
    return {
      name: 'transformers.js/node-cpu',
      facts: { version: t.version, runtime: runtime.name, provider: 'cpu', threads: t.threads, dtype: 'fp32', padding: 'longest', write_ms, load_ms },
      vectorsMatch,
      tokensEqual,
      embed: async (texts) => {
        await t.embed(texts);
        return { tokens: texts.reduce((n, text) => n + (counts.get(text) ?? t.tokens([text])[0]), 0) };
      },
      close: () => t.close(),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** llama.cpp natively (node-llama-cpp's CPU build), the texts one by one in one embedding context. */
async function llamaCppHere(o: BenchEmbedOptions): Promise<{ name: string; embed(texts: string[]): Promise<{ tokens: number }>; close(): Promise<void> }> {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: o.model.dir ? `${o.model.dir}/${o.model.files[0]}` : o.model.files[0] });
  const context = await model.createEmbeddingContext({ contextSize: Math.min(model.trainContextSize, 2048), batchSize: Math.min(model.trainContextSize, 2048), threads: o.threads });
  // The marks llama.cpp adds to a text: BERT's [CLS] and [SEP] (its BOS and EOS), Qwen3-Embedding's EOS, ...
  const { bos, eos, shouldPrependBosToken, shouldAppendEosToken } = model.tokens;
  const marks = (bos !== null && shouldPrependBosToken ? 1 : 0) + (eos !== null && shouldAppendEosToken ? 1 : 0);
  return {
    name: 'llama.cpp/cpu',
    async embed(texts) {
      let tokens = 0;
      for (const t of texts) {
        tokens += model.tokenize(t).length + marks;
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

/** The least cosine between transformers.js's and intab's vectors for which the two count as one computation. */
const VECTORS_MATCH = 0.9999;

const COLUMNS = ['system', 'batch', 'inputs_per_s', 'tokens_per_s', 'ms'];

/** A peer's figures, why no ratio is quoted (when not), and what its ratio line says besides the ratio. */
interface PeerFigures {
  figures: Figure[];
  refused?: string;
  extra: (ratio: number, f: Figure, t: Figure) => Record<string, unknown>;
}

/** transformers.js as a peer: a ratio only for the same computation (the same tokens, vectors within VECTORS_MATCH). */
function transformersPeer(figures: Figure[], vectorsMatch: number, tokensEqual: boolean, sameBackend: boolean, more: Record<string, unknown> = {}): PeerFigures {
  const match = { vectors_match: vectorsMatch, tokens_equal: tokensEqual };
  const refused = tokensEqual && vectorsMatch >= VECTORS_MATCH ? undefined : `transformers.js's ${tokensEqual ? 'vectors differ from' : 'tokens differ from'} intab's (vectors_match ${vectorsMatch}, needs ${VECTORS_MATCH}): no ratio`;
  return { figures, refused, extra: (ratio) => ({ target: 1, met: ratio >= 1, same_backend: sameBackend, ...more, ...match }) };
}

/**
 * `intab bench embed`: prints its lines through `out` [console.log]. `runtime` is --runtime ['node'].
 * @example
 * await benchEmbed({ model: '/tmp/minilm.gguf', backend: 'onnx-wasm', batch: '1,8,32', json: true }, 'chromium');
 */
export async function benchEmbed(flags: Flags, runtime: 'node' | 'chromium' = 'node', out: (line: string) => void = console.log): Promise<number> {
  const o = benchEmbedOptions(flags, runtime);
  // host: where intab and transformers.js ran (--runtime; transformers.js's Node line already names its onnxruntime `runtime`).
  const print = (r: Record<string, unknown>) => out(o.json ? JSON.stringify({ bench: 'embed', host: o.runtime, ...r }) : COLUMNS.map((c) => `${c}=${r[c] ?? '-'}`).join('\t'));
  let ours: Figure[];
  const peers: PeerFigures[] = [];
  if (o.runtime === 'chromium') {
    const { pageSystems } = await import('./bench-embed-page.ts');
    const [intab, ...others] = await pageSystems(o);
    ours = intab.figures;
    for (const f of ours) print({ ...f, backend: intab.backend, ...intab.facts });
    for (const t of others) {
      const match = { vectors_match: t.vectorsMatch, tokens_equal: t.tokensEqual };
      for (const f of t.figures) print({ ...f, backend: t.backend, ...t.facts, ...match });
      // Both in this page on the same device: onnxruntime-web's wasm, or WebGPU on the same adapter (intab's onnx-webgpu
      // on onnxruntime-web's WebGPU execution provider as transformers.js; intab's webgpu on its own kernels).
      peers.push(transformersPeer(t.figures, t.vectorsMatch, t.tokensEqual, true, { backend: intab.backend, versus_backend: t.backend }));
    }
  } else {
    const intab = await intabHere(o);
    /** The texts every batch draws from (benchTexts(n) is a prefix of benchTexts(max)), and intab's vectors of them. */
    const checked = { texts: benchTexts(Math.max(...o.batches)), vectors: { embeddings: [], tokens: [] } as Vectors };
    try {
      ours = await measure(intab, o);
      if (o.transformers) checked.vectors = await intab.vectors(checked.texts);
    } finally {
      await intab.close();
    }
    for (const f of ours) print({ ...f, ...intab.facts });
    // transformers.js's side is an encoder export (transformers-embed.ts): a decoder embedding model has none here.
    const { isEncoderFiles } = await import('@intab/model');
    const encoder = isEncoderFiles(intab.files) ? intab.files : undefined;
    if (o.transformers && !encoder) process.stderr.write(`transformers.js skipped: bench embed writes its ONNX folder for BERT-family encoders, and ${intab.files.config.arch} is a decoder trained to embed\n`);
    if (o.transformers && encoder) {
      const peer = await transformersHere(o, encoder, checked);
      let theirs: Figure[];
      try {
        theirs = await measure(peer, o);
      } finally {
        await peer.close();
      }
      for (const f of theirs) print({ ...f, ...peer.facts, vectors_match: peer.vectorsMatch, tokens_equal: peer.tokensEqual });
      // The same backend where intab runs on onnxruntime-node's CPU provider too (not Dawn): the target.
      peers.push(transformersPeer(theirs, peer.vectorsMatch, peer.tokensEqual, intab.facts.backend !== 'webgpu'));
    }
  }
  if (o.native) {
    const native = await llamaCppHere(o);
    let theirs: Figure[];
    try {
      theirs = await measure(native, o);
    } finally {
      await native.close();
    }
    for (const f of theirs) print({ ...f, threads: o.threads });
    peers.push({ figures: theirs, extra: (_, f, t) => ({ tokens_equal: f.tokens === t.tokens }) });
  }
  for (const f of ours) {
    for (const p of peers) {
      const t = p.figures.find((x) => x.batch === f.batch)!;
      if (p.refused) {
        print({ kind: 'ratio', batch: f.batch, system: f.system, versus: t.system, inputs_per_s_ratio: null, ...p.extra(Number.NaN, f, t), met: false, refused: p.refused });
        continue;
      }
      const ratio = round(f.inputs_per_s / t.inputs_per_s);
      print({ kind: 'ratio', batch: f.batch, system: f.system, versus: t.system, inputs_per_s_ratio: ratio, ...p.extra(ratio, f, t) });
    }
  }
  return 0;
}
