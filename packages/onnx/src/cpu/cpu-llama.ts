// intab's forward of the Llama family on the CPU, for machines without a usable GPU: the matrices run on the wasm
// SIMD128 kernels of ../wasm (GGUF q4_0 / q8_0 blocks read as the file stores them, x quantized to q8_0 first as
// llama.cpp's CPU path does), attention over the paged K/V, the SwiGLU/GeGLU activation, RMSNorm and the residual adds
// on f32x4 kernels there too, and the rest (RoPE, biases, the embedding rows) in plain JS over views of the same wasm
// memory (norm weights copied into it). One call runs every token of a step: the tokens of all
// its sequences are the rows of one matrix, so each weight is read once per step, for a prefill chunk, a batch of
// decoding sequences and a speculative verify entry alike. K/V live in that memory too, per layer (slots, Hkv·D) f32,
// the slots being the PagePool's pages × page size (the layout of the other runners' caches).
//
// What it does not run (Qwen3.5's DeltaNet layers and gated attention) is refused by cpuRunnable (load.ts) before a
// byte is read.

import { dequantizeRow, quantize, ropeInvFreq, rowBytes, ShapeError, type WeightDtype } from '@intab/gpu';
import { IntabModelError, ModelMismatchError, layerWindows, type LlamaConfig } from '@intab/model';
import type { ExpSum } from '../cpu-sampler.ts';
import type { GraphWeight } from '../graph-builder.ts';
import { CpuMatmul, type CpuMatmulDtype, type CpuWeight } from '../wasm/cpu-matmul.ts';
import { ACTIVATION_COEFFICIENTS, type ActivationKernel } from '../wasm/activation.ts';
import { ATTENTION_HEAD_DIM_STEP, ATTENTION_TASK, type AttentionKernels } from '../wasm/attention.ts';
import type { NormKernels } from '../wasm/norm.ts';

/** A matrix's reader: canonical name → its stored bytes (or f32 values), undefined when absent. */
export type CpuTensorRead = (name: string) => Promise<GraphWeight | undefined>;

interface LayerWeights {
  attnNorm: Float32Array;
  q: CpuWeight;
  k: CpuWeight;
  v: CpuWeight;
  bq?: Float32Array;
  bk?: Float32Array;
  bv?: Float32Array;
  qNorm?: Float32Array;
  kNorm?: Float32Array;
  o: CpuWeight;
  attnPostNorm?: Float32Array;
  ffnNorm: Float32Array;
  gate: CpuWeight;
  up: CpuWeight;
  down: CpuWeight;
  ffnPostNorm?: Float32Array;
}

/** The model's weights in the kernels' memory (matrices) and in JS (vectors). */
export interface CpuLlamaWeights {
  /** Writes token `id`'s embedding row (C f32) at out[at..]. */
  embed(id: number, out: Float32Array, at: number): void;
  outputNorm: Float32Array;
  output: CpuWeight;
  layers: LayerWeights[];
  freqFactors?: Float32Array;
  /** Bytes of the matrices as the kernels hold them, and of the vectors. */
  bytes: number;
  /** Matrices stored in a format the kernels do not read (f16, q6_K...), re-quantized to q8_0 on load. */
  requantized: string[];
}

const KERNEL_DTYPES = new Set<string>(['q4_0', 'q8_0']);

/**
 * Reads the weights into `cpu`'s memory: q4_0 / q8_0 matrices as they are stored, any other matrix re-quantized to
 * q8_0 (a real q4_0 file's q6_K output, say), vectors as f32.
 * @example
 * const weights = await loadCpuLlamaWeights(await CpuMatmul.create(), config, tensorWeights(model.tensors), 'model.gguf');
 */
export async function loadCpuLlamaWeights(cpu: CpuMatmul, config: LlamaConfig, read: CpuTensorRead, file: string, signal?: AbortSignal): Promise<CpuLlamaWeights> {
  const { hidden: C, ffn: F, heads: H, kvHeads: Hkv, headDim: D, vocab: V } = config;
  const requantized: string[] = [];
  let bytes = 0;
  const fetch = async (name: string): Promise<GraphWeight> => {
    signal?.throwIfAborted();
    const w = await read(name);
    if (!w) throw new ModelMismatchError(file, name, 'a tensor', 'missing');
    return w;
  };
  const vector = async (name: string, size: number): Promise<Float32Array> => {
    const w = await fetch(name);
    const f = w instanceof Float32Array ? w : dequantizeWhole(w.dtype, w.data, size, file, name);
    if (f.length !== size) throw new ModelMismatchError(file, name, `${size} values`, `${f.length} values`);
    bytes += 4 * size;
    return f;
  };
  const matrix = async (name: string, n: number, k: number): Promise<CpuWeight> => {
    const w = await fetch(name);
    const weight = toKernelWeight(cpu, w, n, k, file, name, () => requantized.push(name));
    bytes += weight.bytes;
    return weight;
  };
  const optional = async (name: string, size: number, present: boolean) => (present ? await vector(name, size) : undefined);

  const layers: LayerWeights[] = [];
  for (let l = 0; l < config.layers; l++) {
    const b = `blk.${l}.`;
    layers.push({
      attnNorm: await vector(`${b}attn_norm.weight`, C),
      q: await matrix(`${b}attn_q.weight`, H * D, C),
      k: await matrix(`${b}attn_k.weight`, Hkv * D, C),
      v: await matrix(`${b}attn_v.weight`, Hkv * D, C),
      bq: await optional(`${b}attn_q.bias`, H * D, config.qkvBias),
      bk: await optional(`${b}attn_k.bias`, Hkv * D, config.qkvBias),
      bv: await optional(`${b}attn_v.bias`, Hkv * D, config.qkvBias),
      qNorm: await optional(`${b}attn_q_norm.weight`, D, config.qkNorm),
      kNorm: await optional(`${b}attn_k_norm.weight`, D, config.qkNorm),
      o: await matrix(`${b}attn_output.weight`, C, H * D),
      attnPostNorm: await optional(`${b}post_attention_norm.weight`, C, config.postNorms),
      ffnNorm: await vector(`${b}ffn_norm.weight`, C),
      gate: await matrix(`${b}ffn_gate.weight`, F, C),
      up: await matrix(`${b}ffn_up.weight`, F, C),
      down: await matrix(`${b}ffn_down.weight`, C, F),
      ffnPostNorm: await optional(`${b}post_ffw_norm.weight`, C, config.postNorms),
    });
  }
  const outputNorm = await vector('output_norm.weight', C);
  const freqFactors = await optional('rope_freqs.weight', config.rope.rotaryDim / 2, config.rope.freqFactors === true);
  let output: CpuWeight;
  let embed: CpuLlamaWeights['embed'];
  if (config.tiedEmbeddings) {
    // One copy: the head's blocks in the kernels' memory, rows dequantized from there.
    output = await matrix('token_embd.weight', V, C);
    embed = (id, out, at) => cpu.weightRow(output, id, out, at);
  } else {
    output = await matrix('output.weight', V, C);
    const t = await fetch('token_embd.weight');
    if (t instanceof Float32Array) {
      if (t.length !== V * C) throw new ModelMismatchError(file, 'token_embd.weight', `${V * C} values`, `${t.length} values`);
      embed = (id, out, at) => out.set(t.subarray(id * C, (id + 1) * C), at);
      bytes += t.byteLength;
    } else {
      const rb = rowBytes(t.dtype, C);
      if (t.data.byteLength !== V * rb) throw new ModelMismatchError(file, 'token_embd.weight', `(${V}, ${C}) ${t.dtype}`, `${t.data.byteLength} bytes`);
      embed = (id, out, at) => dequantizeRow(t.dtype, t.data, id * rb, C, out.subarray(at, at + C) as Float32Array<ArrayBuffer>);
      bytes += t.data.byteLength;
    }
  }
  return { embed, outputNorm, output, layers, freqFactors, bytes, requantized };
}

/** A checkpoint's matrix as the kernels read it: q4_0 / q8_0 blocks as stored; anything else through f32 to q8_0. */
function toKernelWeight(cpu: CpuMatmul, w: GraphWeight, n: number, k: number, file: string, name: string, onRequantize: () => void): CpuWeight {
  if (k % 32 !== 0) throw new ModelMismatchError(file, name, 'rows of a multiple of 32 values (the CPU kernels read 32-value blocks)', `${k}`);
  if (!(w instanceof Float32Array) && KERNEL_DTYPES.has(w.dtype)) {
    const dtype = w.dtype as CpuMatmulDtype;
    if (w.data.byteLength !== n * rowBytes(dtype, k)) throw new ModelMismatchError(file, name, `(${n}, ${k}) ${dtype}`, `${w.data.byteLength} bytes`);
    return cpu.weight(dtype, w.data, n, k);
  }
  onRequantize();
  // Row chunks, so a 150k-row head never exists whole as f32.
  const chunk = Math.max(1, Math.floor((16 << 20) / (4 * k)));
  const out = new Uint8Array(n * rowBytes('q8_0', k));
  const rb = rowBytes('q8_0', k);
  for (let r = 0; r < n; r += chunk) {
    const rows = Math.min(chunk, n - r);
    const f = w instanceof Float32Array ? w.subarray(r * k, (r + rows) * k) : dequantizeRows(w.dtype, w.data, r, rows, k, file, name);
    if (f.length !== rows * k) throw new ModelMismatchError(file, name, `(${n}, ${k}) values`, `${w instanceof Float32Array ? w.length : 'fewer'} values`);
    out.set(quantize('q8_0', f, rows, k), r * rb);
  }
  return cpu.weight('q8_0', out, n, k);
}

function dequantizeRows(dtype: WeightDtype, data: Uint8Array, from: number, rows: number, k: number, file: string, name: string): Float32Array {
  const rb = rowBytes(dtype, k);
  if (data.byteLength < (from + rows) * rb) throw new ModelMismatchError(file, name, `rows of ${k} ${dtype} values`, `${data.byteLength} bytes`);
  const out = new Float32Array(rows * k);
  for (let r = 0; r < rows; r++) dequantizeRow(dtype, data, (from + r) * rb, k, out.subarray(r * k, (r + 1) * k));
  return out;
}

function dequantizeWhole(dtype: WeightDtype, data: Uint8Array, size: number, file: string, name: string): Float32Array {
  try {
    return dequantizeRows(dtype, data, 0, 1, size, file, name);
  } catch (err) {
    if (err instanceof ModelMismatchError) throw err;
    throw new ModelMismatchError(file, name, `${size} values`, `${data.byteLength} bytes of ${dtype}`);
  }
}

/** Where each token of a step sits: its position, and its sequence's K/V slots. */
export interface CpuStepTokens {
  ids: ArrayLike<number>;
  positions: ArrayLike<number>;
  /** Per token, its entry (an index into tables). */
  entryOf: ArrayLike<number>;
  /** Per entry, its sequence's slot table: table[p] = the slot holding position p (up to its last token's). */
  tables: readonly Int32Array[];
}

/**
 * The forward over one step's tokens. Scratch for `maxTokens` tokens and `maxRows` logits rows is reserved in the
 * kernels' memory up front, so nothing grows it while a step runs (a grown memory would detach the views).
 */
export class CpuLlama {
  readonly config: LlamaConfig;
  /** Most positions a sequence can hold: the model's context, or all the slots when they are fewer. */
  private readonly context: number;
  private readonly windows: number[];
  private readonly invFreq: Float64Array;
  private readonly localInvFreq: Float64Array;
  private readonly noRope: Set<number>;
  private readonly ptr: Record<'x' | 'xb' | 'q' | 'k' | 'v' | 'att' | 'proj' | 'gate' | 'up' | 'xq' | 'xd' | 'logits' | 'scores' | 'offs' | 'tasks', number>;
  private views!: Record<'x' | 'xb' | 'q' | 'k' | 'v' | 'att' | 'proj' | 'gate' | 'up' | 'logits', Float32Array> & { keys: Float32Array[]; values: Float32Array[]; offs: Int32Array; tasks: Int32Array };
  private viewsOf?: ArrayBuffer;
  private readonly kvPtr: number;
  /** attn_tasks' index in the CPU threads (WasmThreads.fn), once asked. */
  private tasksFn?: number;
  /** Where each norm weight vector sits in the kernels' memory (copied there for the norm kernel). */
  private readonly normAt = new Map<Float32Array, number>();

  constructor(
    private readonly cpu: CpuMatmul,
    config: LlamaConfig,
    private readonly weights: CpuLlamaWeights,
    /** attentionModule: the attention's compiled module, where the CPU threads run it too (CpuMatmul helperModules). */
    private readonly kernels: { attention: AttentionKernels; activation: ActivationKernel; norm: NormKernels; attentionModule?: WebAssembly.Module },
    readonly maxTokens: number,
    /** Most sequences in one step. */
    readonly maxBatch: number,
    readonly maxRows: number,
    /** K/V slots (pages × page size). */
    readonly slots: number,
  ) {
    if (config.headDim % ATTENTION_HEAD_DIM_STEP) throw new IntabModelError(`cpu-llama: head dimension ${config.headDim} is not a multiple of ${ATTENTION_HEAD_DIM_STEP}, which intab's CPU attention kernel needs.`);
    if (config.linearAttention || config.attnOutputGate) throw new IntabModelError(`cpu-llama: ${config.arch}'s linear attention layers and gated attention run on intab's WebGPU kernels or onnxruntime, not on the CPU kernels.`);
    this.config = config;
    const { hidden: C, ffn: F, heads: H, kvHeads: Hkv, headDim: D, vocab: V } = config;
    this.context = Math.min(config.maxContext, slots);
    this.windows = layerWindows(config).map((w) => w || Infinity);
    // The sliding layers' base takes no scaling (Gemma 3's local layers), as the graph and the WebGPU forward.
    const { rotaryDim, theta, localTheta, scaling } = config.rope;
    const freqFactors = weights.freqFactors;
    this.invFreq = ropeInvFreq({ headDim: config.headDim, rotaryDim, theta, scaling, freqFactors });
    this.localInvFreq = localTheta === undefined ? this.invFreq : ropeInvFreq({ headDim: config.headDim, rotaryDim, theta: localTheta, freqFactors });
    this.noRope = new Set(config.rope.noRopeLayers ?? []);
    const M = maxTokens;
    const K = Math.max(C, F, H * D);
    const f32 = (n: number) => cpu.alloc(4 * n);
    const scratch = cpu.scratchBytes(M, K);
    this.ptr = {
      x: f32(M * C), xb: f32(M * C), q: f32(M * H * D), k: f32(M * Hkv * D), v: f32(M * Hkv * D), att: f32(M * H * D),
      proj: f32(M * C), gate: f32(M * F), up: f32(M * F), xq: cpu.alloc(scratch.xq), xd: cpu.alloc(scratch.xd), logits: f32(maxRows * V),
      // Per thread, a task's attention scores (then weights); each entry's K/V row offsets (bytes, per position); the
      // attention's tasks, one per token and query head (ATTENTION_TASK i32s each).
      scores: f32(this.context * cpu.threads), offs: f32(maxBatch * this.context), tasks: cpu.alloc(4 * ATTENTION_TASK * M * H),
    };
    this.kvPtr = cpu.alloc(2 * config.layers * slots * Hkv * D * 4);
    for (const vec of [weights.outputNorm, ...weights.layers.flatMap((l) => [l.attnNorm, l.ffnNorm, l.qNorm, l.kNorm, l.attnPostNorm, l.ffnPostNorm])]) {
      if (!vec || this.normAt.has(vec)) continue;
      const at = cpu.alloc(4 * vec.length);
      new Float32Array(cpu.memory.buffer, at, vec.length).set(vec);
      this.normAt.set(vec, at);
    }
  }

  /** Ends the kernels' helper threads, if any (the forward is not used again). */
  close(): void {
    this.cpu.close();
  }

  /** Bytes of K/V and scratch this forward holds in the kernels' memory. */
  get scratchBytes(): number {
    return this.cpu.memory.buffer.byteLength - this.ptr.x;
  }

  /** Per layer, K and V as (slots, Hkv·D) f32 views (valid until the memory grows). */
  kv(): { keys: Float32Array[]; values: Float32Array[] } {
    const v = this.view();
    return { keys: v.keys, values: v.values };
  }

  /**
   * Runs the step's tokens through the first `layers` layers, writing each token's K/V at its slot, and returns the
   * logits of `rows` (token indices) as a (rows.length, V) view, valid until the next call.
   */
  forward(t: CpuStepTokens, rows: readonly number[], layers = this.config.layers): Float32Array {
    const M = t.ids.length;
    if (M < 1 || M > this.maxTokens) throw new ShapeError('cpu-llama', 'tokens', `1..${this.maxTokens}`, String(M));
    if (rows.length < 1 || rows.length > this.maxRows) throw new ShapeError('cpu-llama', 'rows', `1..${this.maxRows}`, String(rows.length));
    const c = this.config;
    const { hidden: C, ffn: F, heads: H, kvHeads: Hkv, headDim: D, vocab: V } = c;
    const w = this.weights;
    const v = this.view();
    for (let i = 0; i < M; i++) {
      w.embed(t.ids[i], v.x, i * C);
      if (c.embedScale !== 1) for (let j = i * C; j < (i + 1) * C; j++) v.x[j] *= c.embedScale;
    }
    const rope = this.ropeTables(t.positions);
    // Each entry's K/V row offsets (bytes from a layer's K or V block), for the attention kernel.
    const row = Hkv * D;
    t.tables.forEach((table, e) => {
      for (let p = 0; p < table.length; p++) v.offs[e * this.context + p] = table[p] * row * 4;
    });
    for (let l = 0; l < layers; l++) {
      const lw = w.layers[l];
      // ---- attention ----
      this.rmsnorm(this.ptr.x, lw.attnNorm, this.ptr.xb, C, M);
      this.quantize(this.ptr.xb, M, C);
      this.matmul(lw.q, this.ptr.q, M);
      this.matmul(lw.k, this.ptr.k, M);
      this.matmul(lw.v, this.ptr.v, M);
      if (lw.bq) addBias(v.q, lw.bq, M);
      if (lw.bk) addBias(v.k, lw.bk, M);
      if (lw.bv) addBias(v.v, lw.bv, M);
      if (lw.qNorm && lw.kNorm) {
        this.rmsnorm(this.ptr.q, lw.qNorm, this.ptr.q, D, M * H);
        this.rmsnorm(this.ptr.k, lw.kNorm, this.ptr.k, D, M * Hkv);
      }
      if (!this.noRope.has(l)) {
        const tab = this.windows[l] !== Infinity ? rope.local : rope.global;
        applyRope(v.q, M, H, D, tab, c.rope.style === 'neox');
        applyRope(v.k, M, Hkv, D, tab, c.rope.style === 'neox');
      }
      for (let i = 0; i < M; i++) {
        const slot = t.tables[t.entryOf[i]][t.positions[i]];
        v.keys[l].set(v.k.subarray(i * row, (i + 1) * row), slot * row);
        v.values[l].set(v.v.subarray(i * row, (i + 1) * row), slot * row);
      }
      this.attend(l, t);
      this.quantize(this.ptr.att, M, H * D);
      this.matmul(lw.o, this.ptr.proj, M);
      if (lw.attnPostNorm) this.rmsnorm(this.ptr.proj, lw.attnPostNorm, this.ptr.proj, C, M);
      this.kernels.norm.add(this.ptr.x, this.ptr.proj, M * C);
      // ---- feed-forward ----
      this.rmsnorm(this.ptr.x, lw.ffnNorm, this.ptr.xb, C, M);
      this.quantize(this.ptr.xb, M, C);
      this.matmul(lw.gate, this.ptr.gate, M);
      this.matmul(lw.up, this.ptr.up, M);
      this.kernels.activation.act_mul(this.ptr.gate, this.ptr.up, M * F, ...ACTIVATION_COEFFICIENTS[c.activation]);
      this.quantize(this.ptr.gate, M, F);
      this.matmul(lw.down, this.ptr.proj, M);
      if (lw.ffnPostNorm) this.rmsnorm(this.ptr.proj, lw.ffnPostNorm, this.ptr.proj, C, M);
      this.kernels.norm.add(this.ptr.x, this.ptr.proj, M * C);
    }
    // ---- the rows sampled: final norm, then the head ----
    const R = rows.length;
    for (let r = 0; r < R; r++) this.rmsnorm(this.ptr.x + rows[r] * C * 4, w.outputNorm, this.ptr.xb + r * C * 4, C, 1);
    this.quantize(this.ptr.xb, R, C);
    this.matmul(w.output, this.ptr.logits, R);
    return v.logits.subarray(0, R * V);
  }

  /**
   * Σ exp(logits[row] − m) of a row the last forward returned, on the wasm kernel (the vocabulary's whole vectors) and
   * here (its last V mod 4): the normaliser of the row's logprobs.
   */
  expSum(row: number): ExpSum {
    const V = this.config.vocab;
    const whole = V & ~3;
    const ptr = this.ptr.logits + row * V * 4;
    return (m) => {
      let s = this.kernels.attention.exp_sum(ptr, whole, m);
      const logits = this.view().logits;
      for (let v = whole; v < V; v++) s += Math.exp(logits[row * V + v] - m);
      return s;
    };
  }

  /** `rows` rows of n f32 at x → out (may be x): RMSNorm with weight `w`, on the norm kernel. */
  private rmsnorm(x: number, w: Float32Array, out: number, n: number, rows: number): void {
    this.kernels.norm.rms_norm(x, this.normAt.get(w)!, out, n, rows, this.config.rmsEps);
  }

  /** x (m, k) at `ptr` → the kernels' quantized x scratch. */
  private quantize(ptr: number, m: number, k: number): void {
    this.cpu.quantizeX(ptr, this.ptr.xq, this.ptr.xd, (m * k) / 32);
  }

  private matmul(w: CpuWeight, y: number, m: number): void {
    this.cpu.raw(w, this.ptr.xq, this.ptr.xd, y, m);
  }

  /**
   * att (M, H·D): for each token and query head, softmax(q·k_j · scale) over the positions its sequence holds up to its
   * own (within the layer's window), times v_j, on the wasm kernels: one task per token and head (attn_tasks), the
   * tasks split across the CPU threads in runs of about equal work (Σ n), each thread with its own scores.
   */
  private attend(l: number, t: CpuStepTokens): void {
    const { heads: H, kvHeads: Hkv, headDim: D, attnScale: scale } = this.config;
    const group = H / Hkv;
    const window = this.windows[l];
    const layerBytes = this.slots * Hkv * D * 4;
    const keys = this.kvPtr + 2 * l * layerBytes;
    const values = keys + layerBytes;
    const tasks = this.view().tasks;
    let count = 0;
    let work = 0;
    for (let i = 0; i < t.ids.length; i++) {
      const pos = t.positions[i];
      const lo = window === Infinity ? 0 : Math.max(0, pos - window + 1);
      const n = pos - lo + 1;
      const offs = this.ptr.offs + (t.entryOf[i] * this.context + lo) * 4;
      for (let h = 0; h < H; h++, count++) {
        const head = (i * H + h) * D * 4;
        const kvHead = Math.floor(h / group) * D * 4; // GQA: query head h reads kv head h / (H/Hkv)
        const at = count * ATTENTION_TASK;
        tasks[at] = this.ptr.q + head;
        tasks[at + 1] = keys + kvHead;
        tasks[at + 2] = values + kvHead;
        tasks[at + 3] = offs;
        tasks[at + 4] = n;
        tasks[at + 5] = this.ptr.att + head;
        work += n;
      }
    }
    const a = this.kernels.attention;
    const pool = this.kernels.attentionModule && this.cpu.threadPool;
    if (!pool || work * D < ATTENTION_SPLIT_FROM) return a.attn_tasks(this.ptr.tasks, 0, count, D, this.ptr.scores, scale);
    // thread p takes the tasks from bound(p): runs of about work / threads
    const T = pool.threads;
    const bounds = [0];
    for (let i = 0, sum = 0; i < count && bounds.length < T; i++) {
      sum += tasks[i * ATTENTION_TASK + 4];
      if (sum * T >= work * bounds.length) bounds.push(i + 1);
    }
    while (bounds.length <= T) bounds.push(count);
    const scores = (p: number) => this.ptr.scores + p * this.context * 4;
    const args = Array.from({ length: T - 1 }, (_, h) => [this.ptr.tasks, bounds[h + 1], bounds[h + 2], D, scores(h + 1), scale]);
    this.tasksFn ??= pool.fn(this.kernels.attentionModule!, 'attn_tasks');
    pool.run(this.tasksFn, args, () => a.attn_tasks(this.ptr.tasks, 0, bounds[1], D, scores(0), scale));
  }

  /** cos/sin of every token's position, per rotated pair: the global layers' and the sliding ones'. */
  private ropeTables(positions: ArrayLike<number>): { global: RopeTable; local: RopeTable } {
    const table = (inv: Float64Array): RopeTable => {
      const half = inv.length;
      const cos = new Float64Array(positions.length * half);
      const sin = new Float64Array(positions.length * half);
      for (let i = 0; i < positions.length; i++) {
        for (let j = 0; j < half; j++) {
          const a = positions[i] * inv[j];
          cos[i * half + j] = Math.cos(a);
          sin[i * half + j] = Math.sin(a);
        }
      }
      return { cos, sin, half };
    };
    const global = table(this.invFreq);
    return { global, local: this.localInvFreq === this.invFreq ? global : table(this.localInvFreq) };
  }

  /** Views of the scratch and the K/V, made again whenever the memory has grown (growing detaches them). */
  private view(): CpuLlama['views'] {
    const buf = this.cpu.memory.buffer;
    if (this.viewsOf === buf) return this.views;
    const { hidden: C, ffn: F, heads: H, kvHeads: Hkv, headDim: D, vocab: V, layers: L } = this.config;
    const M = this.maxTokens;
    const at = (ptr: number, n: number) => new Float32Array(buf, ptr, n);
    const layerFloats = this.slots * Hkv * D;
    this.views = {
      x: at(this.ptr.x, M * C), xb: at(this.ptr.xb, M * C), q: at(this.ptr.q, M * H * D), k: at(this.ptr.k, M * Hkv * D), v: at(this.ptr.v, M * Hkv * D),
      att: at(this.ptr.att, M * H * D), proj: at(this.ptr.proj, M * C), gate: at(this.ptr.gate, M * F), up: at(this.ptr.up, M * F), logits: at(this.ptr.logits, this.maxRows * V),
      offs: new Int32Array(buf, this.ptr.offs, this.maxBatch * this.context), tasks: new Int32Array(buf, this.ptr.tasks, ATTENTION_TASK * M * H),
      keys: Array.from({ length: L }, (_, l) => at(this.kvPtr + 2 * l * layerFloats * 4, layerFloats)),
      values: Array.from({ length: L }, (_, l) => at(this.kvPtr + (2 * l + 1) * layerFloats * 4, layerFloats)),
    };
    this.viewsOf = buf;
    return this.views;
  }
}

/**
 * Multiply-adds (Σ n · D over a layer's tasks, for the scores) from which the attention is split across threads: a
 * decode step's (9 heads × 100 positions × 64) and up.
 */
const ATTENTION_SPLIT_FROM = 1 << 14;

interface RopeTable {
  cos: Float64Array;
  sin: Float64Array;
  half: number;
}

function addBias(y: Float32Array, b: Float32Array, m: number): void {
  const n = b.length;
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) y[i * n + j] += b[j];
}

/** Rotates each of `heads` D-rows of every token: pairs (2j, 2j+1), or (j, j + half) with neox. */
function applyRope(x: Float32Array, m: number, heads: number, d: number, tab: RopeTable, neox: boolean): void {
  const { cos, sin, half } = tab;
  for (let i = 0; i < m; i++) {
    for (let h = 0; h < heads; h++) {
      const base = (i * heads + h) * d;
      for (let j = 0; j < half; j++) {
        const c = cos[i * half + j];
        const s = sin[i * half + j];
        const u = base + (neox ? j : 2 * j);
        const w = neox ? u + half : u + 1;
        const x0 = x[u];
        const x1 = x[w];
        x[u] = x0 * c - x1 * s;
        x[w] = x0 * s + x1 * c;
      }
    }
  }
}
