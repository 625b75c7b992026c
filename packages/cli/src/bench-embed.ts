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
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EMBED_INPUTS, cosine } from '@intab/testing/embed-inputs';
import { wholeFlag, type Flags } from './args.ts';
import { round } from './grammar-stats.ts';
import { median } from './bench-tools.ts';
import { resolveModel, type ResolvedModel } from './model-files.ts';
import type { EncoderFiles } from '@intab/model';

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
  /** Skip transformers.js (--no-transformers). */
  transformers: boolean;
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
    transformers: flags['no-transformers'] === undefined,
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

/** What a system's vectors are checked against: intab's, for the texts timed. */
interface Vectors {
  embeddings: Float32Array[];
  /** Tokens of each text. */
  tokens: number[];
}

/** The engine in this process: its backend's name, embed() and the vectors themselves. */
async function intabHere(o: BenchEmbedOptions): Promise<{ name: string; facts: Record<string, unknown>; files: EncoderFiles; embed(texts: string[]): Promise<{ tokens: number }>; vectors(texts: string[]): Promise<Vectors>; close(): Promise<void> }> {
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

/** The least cosine between transformers.js's and intab's vectors for which the two count as one computation. */
const VECTORS_MATCH = 0.9999;

const COLUMNS = ['system', 'batch', 'inputs_per_s', 'tokens_per_s', 'ms'];

export async function benchEmbed(flags: Flags): Promise<number> {
  const o = benchEmbedOptions(flags);
  const print = (r: Record<string, unknown>) => console.log(o.json ? JSON.stringify({ bench: 'embed', ...r }) : COLUMNS.map((c) => `${c}=${r[c] ?? '-'}`).join('\t'));
  const intab = await intabHere(o);
  let ours: Figure[];
  /** The texts every batch draws from (benchTexts(n) is a prefix of benchTexts(max)), and intab's vectors of them. */
  const checked = { texts: benchTexts(Math.max(...o.batches)), vectors: { embeddings: [], tokens: [] } as Vectors };
  try {
    ours = await measure(intab, o);
    if (o.transformers) checked.vectors = await intab.vectors(checked.texts);
  } finally {
    await intab.close();
  }
  for (const f of ours) print({ ...f, ...intab.facts });
  /** Each peer's figures and what its ratio line says besides the ratio. */
  const peers: { figures: Figure[]; refused?: string; extra: (ratio: number, f: Figure, t: Figure) => Record<string, unknown> }[] = [];
  if (o.transformers) {
    const peer = await transformersHere(o, intab.files, checked);
    let theirs: Figure[];
    try {
      theirs = await measure(peer, o);
    } finally {
      await peer.close();
    }
    const match = { vectors_match: peer.vectorsMatch, tokens_equal: peer.tokensEqual };
    for (const f of theirs) print({ ...f, ...peer.facts, ...match });
    // The same backend where intab runs on onnxruntime-node's CPU provider too (not Dawn): the target.
    const sameBackend = intab.facts.backend !== 'webgpu';
    // A ratio is quoted only for the same computation: the same tokens, and vectors within cosine VECTORS_MATCH.
    const refused = peer.tokensEqual && peer.vectorsMatch >= VECTORS_MATCH ? undefined : `transformers.js's ${peer.tokensEqual ? 'vectors differ from' : 'tokens differ from'} intab's (vectors_match ${peer.vectorsMatch}, needs ${VECTORS_MATCH}): no ratio`;
    peers.push({ figures: theirs, refused, extra: (ratio) => ({ target: 1, met: ratio >= 1, same_backend: sameBackend, ...match }) });
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
