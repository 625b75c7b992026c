// intab's own CPU matmul kernels for GGUF q8_0/q4_0 weights: one wasm SIMD128 module (built by wasm-module.ts from
// the emitters in kernel-lib.ts, gemv-q8_0.ts, gemv-q4_0.ts) over one linear memory the host owns, with the weights
// copied in as the file stores them. It exists because onnxruntime-web's quantized ops do not stream 4-bit weights on
// the CPU (MatMulNBits dequantizes the whole matrix per call), so its f32 graph reads 7× the bytes. The CPU forward
// (../cpu/cpu-llama.ts) runs its matrices here, on one thread or split across wasm threads (wasm-threads.ts).
//
// Exports of the module, all (w, xq, xd, y, n, k, m, r0, r1) → () (rows r0..r1 of y; threads take parts) except
// quantize_x (x, xq, xd, blocks) → ():
//   gemv_<dtype>_<layout>: tiles of ROWS weight rows × 1 token (decode: each x block reused across ROWS rows)
//   gemm_<dtype>_<layout>: tiles of PREFILL_ROWS rows × TOKENS tokens (prefill: each unpacked weight block reused
//                          across TOKENS tokens and each x block across PREFILL_ROWS rows)
//   (for 'split4', rows come in its groups of 4 whatever ROWS and PREFILL_ROWS say, decode tiles are STREAMS groups
//   × DECODE_TOKENS tokens and prefill tiles depend on the format: kernel-lib.ts emitMatmul4, DEFAULT_TILES)
//   gemv_q8_0_<layout>_wide, gemm_q8_0_<layout>_wide: the relaxed modules' i16 dot for q8_0 matrices holding a −128
// for dtype q8_0 | q4_0 and layout gguf | split | split4 | split4w (the last on the relaxed kernels; kernel-lib.ts
// WeightLayout). One module is built per CpuKernel:
//   'relaxed-u8': 'relaxed' where the engine's add form also computes an unsigned 8-bit second operand exactly
//                (x64 with AVX-VNNI: vpdpbusd; probed): q8_0 quants are stored + 128 as that operand, so a q8_0 block
//                takes two dots as a q4_0 block does, not four (gemv-q8_0.ts); the default there (Chromium here)
//   'relaxed':   relaxed-SIMD dots (i32x4.relaxed_dot_i8x16_i7x16_add_s) over the 'i8' x layout; the default where
//                the engine has the opcode and computes it right (Chromium)
//   'relaxed16': the same with i16x8.relaxed_dot_i8x16_i7x16_s (kernel-lib.ts RelaxedForm): for engines whose add
//                form is wrong, as Node 20's behind --experimental-wasm-relaxed-simd
//   'i16':       the SIMD128 i16 dots over the 'i16' x layout; the fallback without relaxed SIMD
//   'i8':        the i16 dots over the 'i8' x layout, widened in the kernel (the relaxed modules' exact fallback for
//                q8_0 matrices holding a −128; as a module of its own, for tests and measurement)
// Pointers are byte offsets into the memory; layouts as kernel-lib.ts documents them. The scratch a caller passes is
// the same for every kernel: xq 4·M·K bytes, xd 4·M·K/32 bytes (scratchBytes).

import { ShapeError, f16ToF32, rowBytes } from '@intab/gpu';
import { X_SLOT, emitMatmul, emitMatmul4, emitQuantizeX, i16Dot, interleaved, layoutBytes, type BlockDot, type RelaxedForm, type WeightFormat, type WeightLayout } from './kernel-lib.ts';
import { Q4_0 } from './gemv-q4_0.ts';
import { Q8_0 } from './gemv-q8_0.ts';
import { I32, V128, WasmModule } from './wasm-module.ts';
import { WasmThreads, sharedMemory } from './wasm-threads.ts';

/** The weight formats the CPU kernels read. */
export type CpuMatmulDtype = 'q8_0' | 'q4_0';

/** Which block dot the module runs (header). */
export type CpuKernel = 'relaxed-u8' | 'relaxed' | 'relaxed16' | 'i16' | 'i8';

const FORMATS: Readonly<Record<CpuMatmulDtype, WeightFormat>> = { q8_0: Q8_0, q4_0: Q4_0 };
const PAGE = 65536;

/**
 * The relaxed-SIMD dot forms this engine has and computes right on in-range operands (where the result is defined):
 * Chromium ≥ 114 both; Node 20 none by default, and with --experimental-wasm-relaxed-simd only 'dot16' (its add form
 * drops the accumulator and doubles the dot). 'u8' besides where the add form also takes a second operand of 128..255
 * as unsigned, without saturating (the implementation-defined case: x64 V8 with AVX-VNNI; pmaddubsw saturates pairs,
 * ARM's sdot reads it signed). Probed once per call with a tiny module.
 */
export function relaxedSimdForms(): RelaxedForm[] {
  const a = Int8Array.from({ length: 16 }, (_, i) => (i % 3 === 0 ? -1 : 1) * (17 * i + 3));
  const b = Uint8Array.from({ length: 16 }, (_, i) => (29 * i + 5) % 128);
  const acc = new Int32Array([1000, -2000, 3000, -4000]);
  const mod = new WasmModule({ memoryPages: 1 });
  const v = (lanes: Int8Array | Uint8Array | Int32Array) => new Uint8Array(lanes.buffer, lanes.byteOffset, lanes.byteLength);
  mod.func('add', [I32], []).get(0).v128_const(v(a)).v128_const(v(b)).v128_const(v(acc)).i32x4_relaxed_dot_i8x16_i7x16_add_s().v128_store(0);
  mod.func('dot16', [I32], []).get(0).v128_const(v(a)).v128_const(v(b)).i16x8_relaxed_dot_i8x16_i7x16_s().v128_store(0);
  // u8: products up to 127·255 and −128·255, four to a lane (pmaddubsw would saturate every pair)
  const ua = Int8Array.from({ length: 16 }, (_, i) => [127, -128, 100, -77][i % 4] - (i >> 2));
  const ub = Uint8Array.from({ length: 16 }, (_, i) => [255, 254, 128, 200][i % 4] - (i >> 2));
  mod.func('u8', [I32], []).get(0).v128_const(v(ua)).v128_const(v(ub)).v128_const(v(acc)).i32x4_relaxed_dot_i8x16_i7x16_add_s().v128_store(0);
  const bytes = mod.encode();
  if (!WebAssembly.validate(bytes)) return [];
  const memory = new WebAssembly.Memory({ initial: 1 });
  const probe = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } }).exports as Record<RelaxedForm, (p: number) => void>;
  const dot = (lane: number, width: number) => Array.from({ length: width }, (_, j) => a[lane * width + j] * b[lane * width + j]).reduce((s, p) => s + p, 0);
  probe.add(0);
  const addOk = [...new Int32Array(memory.buffer, 0, 4)].every((got, l) => got === acc[l] + dot(l, 4));
  probe.dot16(0);
  const dot16Ok = [...new Int16Array(memory.buffer, 0, 8)].every((got, l) => got === dot(l, 2));
  probe.u8(0);
  const u8Ok = addOk && [...new Int32Array(memory.buffer, 0, 4)].every((got, l) => got === acc[l] + [0, 1, 2, 3].reduce((s, j) => s + ua[4 * l + j] * ub[4 * l + j], 0));
  return [...(addOk ? ['add' as const] : []), ...(dot16Ok ? ['dot16' as const] : []), ...(u8Ok ? ['u8' as const] : [])];
}

/** The kernels this engine can run, fastest first (CpuKernel). */
export function availableKernels(): CpuKernel[] {
  const forms = relaxedSimdForms();
  return [...(forms.includes('u8') ? ['relaxed-u8' as const] : []), ...(forms.includes('add') ? ['relaxed' as const] : []), ...(forms.includes('dot16') ? ['relaxed16' as const] : []), 'i16', 'i8'];
}

/**
 * The layout `weight` repacks into by default, per kernel. Split scales: on one thread the kernels are bound by
 * instructions, not by bytes (15 G weights/s from cache, 3–5 GB/s from memory), and decoding the inline f16 scale
 * costs a dozen scalar ops per block; measured on the SmolLM2-135M and Qwen3-0.6B decode shapes, 'split' is 1.3–1.6×
 * faster than 'gguf' summed over a step despite 11% (q4_0) or 6% (q8_0) more bytes. 'split4' (rows interleaved in
 * fours, reduced into vector lanes) cuts the per-block scaling and pointer work further: with the relaxed dots it is
 * 1.1× 'split' at decode from cache and 1.5× at a 64-token prefill (q4_0, Node 20); with the i16 dot 1.3× at
 * prefill. Its decode reads 4 streams at once (DEFAULT_TILES), without which a matrix read from memory (an LM head)
 * is slower than in 'split'. 'gguf' stays for memory-tight loads (weights byte-identical to the file).
 * 'split4w' (a group's block interleaved by 4-byte words, so the 4 rows' dots land in lanes without the
 * transpose-add) runs q4_0 on the relaxed kernels: in Chromium 156 on 300 distinct 1536×576 matrices read from
 * memory, 5–18% faster per token than 'split4' at M = 1–32 (M = 32: 16.6 against 20.2 µs). q8_0 stays in 'split4':
 * 'split4w' measured 2–12% slower with x⁺/x⁻ ('relaxed') and alike on 'relaxed-u8' (17.7 against 16.7 µs at M = 32).
 * On 'relaxed-u8' q8_0 takes two dots a block instead of four: 16.7 against 22.7 µs per token at M = 32, 21 against
 * 27 at M = 5, M = 1 alike (bound by memory).
 */
export const DEFAULT_LAYOUTS: Readonly<Record<CpuKernel, Readonly<Record<CpuMatmulDtype, WeightLayout>>>> = {
  'relaxed-u8': { q4_0: 'split4w', q8_0: 'split4' },
  relaxed: { q4_0: 'split4w', q8_0: 'split4' },
  relaxed16: { q4_0: 'split4w', q8_0: 'split4' },
  i16: { q4_0: 'split4', q8_0: 'split4' },
  i8: { q4_0: 'split4', q8_0: 'split4' },
};

export type { WeightLayout } from './kernel-lib.ts';

/** A weight matrix in the kernels' memory. */
export interface CpuWeight {
  readonly dtype: CpuMatmulDtype;
  readonly layout: WeightLayout;
  /** (N, K): N output rows of K elements. */
  readonly n: number;
  readonly k: number;
  /** Byte offset in the memory. */
  readonly ptr: number;
  /** Bytes it takes there. */
  readonly bytes: number;
  /** True where the relaxed dot would not be exact (a q8_0 quant of −128): the 'relaxed' module runs the i16 dot. */
  readonly wide?: boolean;
  /** True where the quants are stored + 128 (q8_0 on the 'relaxed-u8' kernel, but in 'gguf'). */
  readonly offset?: boolean;
}

export interface CpuMatmulOptions {
  /** Weight rows per decode tile (default DEFAULT_TILES[kernel].rows). */
  readonly rows?: number;
  /** Weight rows per prefill tile (default DEFAULT_TILES[kernel].prefillRows; rows × tokens ≤ 16). */
  readonly prefillRows?: number;
  /** Tokens per prefill tile (default DEFAULT_TILES[kernel].tokens); in 'gguf' and 'split', M below it runs the decode tiles. */
  readonly tokens?: number;
  /** The block dot (header); default the first of availableKernels(). */
  readonly kernel?: CpuKernel;
  /** The layout `weight` repacks into unless told, for either format (default DEFAULT_LAYOUTS[kernel][dtype]). */
  readonly layout?: WeightLayout;
  /** 'split4' decode: row groups far apart per tile, 1–8 (kernel-lib.ts emitMatmul4; default DEFAULT_TILES[kernel].streams). */
  readonly streams?: number;
  /** 'split4' decode: tokens per tile, streams × decodeTokens ≤ 8 (default DEFAULT_TILES[kernel].decodeTokens). */
  readonly decodeTokens?: number;
  /** 'split4': the M from which the prefill tiles run (default DEFAULT_TILES[kernel].prefillFrom). */
  readonly prefillFrom?: number;
  /** 'split4' q4_0 prefill: bytes ahead each block's weights are touched, 0 for none (default DEFAULT_TILES[kernel].touch). */
  readonly touch?: number;
  /** Initial memory in 64 KiB pages (it grows as weights are uploaded). */
  readonly initialPages?: number;
  /**
   * Threads a matmul's rows are split across [1]: more than 1 runs helper threads over a shared memory
   * (wasm-threads.ts; a browser allows that only on a cross-origin isolated page: threadsUnavailable).
   */
  readonly threads?: number;
  /** Multiply-adds (N·K·M) from which a matmul is split across the threads (default SPLIT_FROM). */
  readonly splitFrom?: number;
  /**
   * Other kernel modules over the same memory (built shared where `threads` > 1) that the helper threads instantiate
   * too, so that their callers can split calls across them (threadPool): the attention's.
   */
  readonly helperModules?: readonly WebAssembly.Module[];
}

type Kernel = (w: number, xq: number, xd: number, y: number, n: number, k: number, m: number, r0: number, r1: number) => void;

/**
 * Multiply-adds (N·K·M) from which a matmul is split across threads: below it the handoff (a cache line to and from
 * each helper, a microsecond or two) costs about what the share saves. On a SmolLM2-135M-shaped q4_0 decode step on
 * 2 threads (Node 20, 2 cores), 2^16 (which splits its 192×576 K and V) measured 10.0 ms a token, 2^18 10.9, 2^20
 * (which leaves its 576×576 output projection whole too) 13.2, one thread 17–18; within noise of 0.
 */
const SPLIT_FROM = 1 << 16;

/**
 * Tile shapes per kernel, from tile sweeps (cpu-matmul.bench.test.ts, INTAB_CPU_KERNEL_SWEEP=1, and the same in
 * Chromium 150) on the SmolLM2 FFN shapes at M = 64: 'split4' takes rows in fours (rows and prefillRows apply to
 * 'gguf' and 'split'); tokens: 'relaxed' (Chromium) 8 best for q4_0 (+7–12% over 4), q8_0 flat from 2 to 8;
 * 'relaxed16' (Node) 4 to 8 alike; the i16 dot 8 (+8% over 4). In 'gguf' and 'split', M below `tokens` runs the
 * decode tiles.
 * 'split4' decode reads 4 row-group streams far apart (kernel-lib.ts emitStreamLoops): on the 151669×576 and
 * 151936×1024 heads read from memory 1.5–2.3× faster than 1 stream; 6 or 8 streams no better in Node, 6 at most 10%
 * better on a head in Chromium but worse from cache. Its tiles take 2 tokens (decodeTokens): measured in Chromium 156
 * on 300 distinct 1536×576 matrices (165 MB, read from memory as a model's layers are), per token and matrix at M =
 * 2–8, q4_0 24–28 µs against 34–37 µs one token at a time, q8_0 26–38 against 27–45, M = 1 alike: a verify step of
 * speculation or a few sequences' decodes. From M = 12 (prefillFrom) q4_0 runs one group × 8 tokens (M = 16: 19 µs
 * against 23), whose compute per byte outpaces the hardware's prefetch from memory unless each block's weights are
 * touched 2 KiB ahead (`touch`: 42 → 31 µs at M = 8, 22 → 20 at M = 32); q8_0 runs its 4 streams one token at a time
 * there (buildCpuMatmulModule says why; 23 µs at M = 32 against 25–29 for the alternatives), but on 'relaxed-u8',
 * where its dot is q4_0's and so are its tiles. The i16 dots (browsers without relaxed SIMD), measured alike in
 * Chromium 156: q4_0's 8-token tiles from M = 5 (prefillFrom; M = 8: 37 µs against 57 for 4 streams × 2 tokens, M =
 * 2: 85 against 59), q8_0 4 streams × 2 tokens at every M ≥ 2 (36 µs at M = 32 against 41 one token at a time).
 */
export const DEFAULT_TILES: Readonly<Record<CpuKernel, { rows: number; prefillRows: number; tokens: number; streams: number; decodeTokens: number; prefillFrom: number; touch: number }>> = {
  'relaxed-u8': { rows: 4, prefillRows: 2, tokens: 8, streams: 4, decodeTokens: 2, prefillFrom: 12, touch: 2048 },
  relaxed: { rows: 4, prefillRows: 2, tokens: 8, streams: 4, decodeTokens: 2, prefillFrom: 12, touch: 2048 },
  relaxed16: { rows: 4, prefillRows: 2, tokens: 4, streams: 4, decodeTokens: 2, prefillFrom: 12, touch: 2048 },
  i16: { rows: 2, prefillRows: 2, tokens: 8, streams: 4, decodeTokens: 2, prefillFrom: 5, touch: 2048 },
  i8: { rows: 2, prefillRows: 2, tokens: 4, streams: 4, decodeTokens: 2, prefillFrom: 5, touch: 2048 },
};

/** A module's configuration: the kernel and its tile shapes. */
export interface CpuMatmulConfig {
  readonly kernel: CpuKernel;
  /** The layout `weight` repacks each format into unless told. */
  readonly layouts: Readonly<Record<CpuMatmulDtype, WeightLayout>>;
  readonly rows: number;
  readonly prefillRows: number;
  readonly tokens: number;
  readonly streams: number;
  readonly decodeTokens: number;
  readonly prefillFrom: number;
  readonly touch: number;
}

/** The module's binary for a configuration (exported for tests that validate the encoding). */
export function buildCpuMatmulModule(config: Omit<CpuMatmulConfig, 'layouts' | 'prefillFrom'>, shared = false): Uint8Array<ArrayBuffer> {
  const { kernel, rows, prefillRows, tokens, streams, decodeTokens, touch } = config;
  const mod = new WasmModule({ memoryPages: 1, shared });
  const xLayout = kernel === 'i16' ? 'i16' : 'i8';
  const relaxed: RelaxedForm | undefined = kernel === 'relaxed-u8' ? 'u8' : kernel === 'relaxed' ? 'add' : kernel === 'relaxed16' ? 'dot16' : undefined;
  emitQuantizeX(mod.func('quantize_x', [I32, I32, I32, I32], []), xLayout);
  const emit = (name: string, f: WeightFormat, dot: BlockDot, layout: WeightLayout) => {
    const gemv = mod.func(`gemv_${name}`, [I32, I32, I32, I32, I32, I32, I32, I32, I32], []);
    const gemm = mod.func(`gemm_${name}`, [I32, I32, I32, I32, I32, I32, I32, I32, I32], []);
    if (layout === 'split4w') {
      // tiles as 'split4' q4_0's
      const words = f.words(formOf(layout)!);
      emitMatmul4(gemv, f, words, decodeTokens, streams);
      emitMatmul4(gemm, f, words, tokens, 1, touch);
      return;
    }
    if (layout === 'split4') {
      emitMatmul4(gemv, f, dot, decodeTokens, streams);
      // q8_0 (but on 'u8') has no unpacking worth sharing across 8 tokens: its prefill runs the decode's 4 streams,
      // one token at a time on the relaxed kernels (each x⁺/x⁻ block shared by 16 rows), as the decode tiles on the
      // i16 dots (measured best either way); q4_0 unpacks once for `tokens`
      if (f === Q8_0 && relaxed !== 'u8') emitMatmul4(gemm, f, dot, relaxed ? 1 : decodeTokens, streams);
      else emitMatmul4(gemm, f, dot, tokens, 1, touch);
      return;
    }
    emitMatmul(gemv, f, dot, layout, rows, 1);
    emitMatmul(gemm, f, dot, layout, prefillRows, tokens);
  };
  // 'gguf' keeps the file's bytes, so q8_0 there is not stored + 128: the 'u8' kernel runs the add form on it
  const formOf = (layout: WeightLayout) => (relaxed === 'u8' && layout === 'gguf' ? 'add' : relaxed);
  for (const [dtype, f] of Object.entries(FORMATS)) {
    for (const layout of relaxed ? (['gguf', 'split', 'split4', 'split4w'] as const) : (['gguf', 'split', 'split4'] as const)) {
      const form = formOf(layout);
      emit(`${dtype}_${layout}`, f, form ? f.relaxed(form) : i16Dot(f, xLayout), layout);
      if (layout === 'split4w') continue; // exact for every quant
      if (relaxed && dtype === 'q8_0') emit(`${dtype}_${layout}_wide`, f, i16Dot(f, xLayout), layout);
    }
  }
  return mod.encode();
}

/** `options` with the defaults filled in. */
export function cpuMatmulConfig(options: CpuMatmulOptions = {}): CpuMatmulConfig {
  const kernel = options.kernel ?? availableKernels()[0];
  const tiles = DEFAULT_TILES[kernel];
  return {
    kernel,
    layouts: options.layout ? { q4_0: options.layout, q8_0: options.layout } : DEFAULT_LAYOUTS[kernel],
    rows: options.rows ?? tiles.rows,
    prefillRows: options.prefillRows ?? tiles.prefillRows,
    tokens: options.tokens ?? tiles.tokens,
    streams: options.streams ?? tiles.streams,
    decodeTokens: options.decodeTokens ?? tiles.decodeTokens,
    prefillFrom: options.prefillFrom ?? tiles.prefillFrom,
    touch: options.touch ?? tiles.touch,
  };
}

/**
 * The CPU matmul kernels and the memory they read: weights are uploaded once (`upload`), then `matmul` quantizes x
 * to q8_0 and runs the kernel. A bump arena: uploads are never freed (a model's weights live as long as it does).
 * @example
 * const cpu = await CpuMatmul.create();
 * const w = cpu.weight('q4_0', q4Bytes, N, K);        // (N, K) q4_0 blocks as the GGUF stores them, repacked
 * const y = cpu.matmul(w, x);                         // x: (M, K) f32 → y: (M, N) f32
 */
export class CpuMatmul {
  private top = 0;
  private scratch = { ptr: 0, bytes: 0 };

  private constructor(
    readonly memory: WebAssembly.Memory,
    private readonly exports: Record<string, Kernel> & { quantize_x: (x: number, xq: number, xd: number, blocks: number) => void },
    /** The kernel and tile shapes this instance runs. */
    readonly config: CpuMatmulConfig,
    /** The helper threads, each kernel's index there, and the multiply-adds from which a matmul is split; absent on one thread. */
    private readonly pool?: { threads: WasmThreads; fns: Map<string, number>; splitFrom: number },
    /** Why more threads were asked for and one runs (the helpers could not start), else undefined. */
    readonly threadsError?: string,
  ) {}

  /**
   * Compiles the kernels for `options` over a new memory (a shared one with `threads` > 1, whose helper threads are
   * started here; where they cannot start, as under a CSP without `worker-src blob:`, one thread runs and
   * `threadsError` says why).
   */
  static async create(options: CpuMatmulOptions = {}): Promise<CpuMatmul> {
    const config = cpuMatmulConfig(options);
    const threads = options.threads ?? 1;
    if (!(Number.isInteger(threads) && threads >= 1)) throw new RangeError(`threads: a positive integer, got ${threads}`);
    const initial = Math.max(1, options.initialPages ?? 16);
    const memory = threads > 1 ? sharedMemory(initial) : new WebAssembly.Memory({ initial });
    const module = await WebAssembly.compile(buildCpuMatmulModule(config, threads > 1));
    const instance = await WebAssembly.instantiate(module, { env: { memory } });
    if (threads === 1) return new CpuMatmul(memory, instance.exports as never, config);
    let pool: WasmThreads;
    try {
      pool = await WasmThreads.start(memory, [module, ...(options.helperModules ?? [])], threads - 1);
    } catch (err) {
      return new CpuMatmul(memory, instance.exports as never, config, undefined, `its helper threads could not start (${(err as Error)?.message ?? err})`);
    }
    const fns = new Map(WebAssembly.Module.exports(module).map((d) => [d.name, pool.fn(module, d.name)] as const));
    return new CpuMatmul(memory, instance.exports as never, config, { threads: pool, fns, splitFrom: options.splitFrom ?? SPLIT_FROM });
  }

  /** Threads a matmul runs on. */
  get threads(): number {
    return this.pool?.threads.threads ?? 1;
  }

  /** The helper threads, for calls into helperModules; undefined on one thread (or once they are closed). */
  get threadPool(): WasmThreads | undefined {
    return this.pool && !this.pool.threads.closed ? this.pool.threads : undefined;
  }

  /** Ends the helper threads (a later matmul runs on this thread alone). */
  close(): void {
    this.pool?.threads.close();
  }

  /**
   * The scratch `quantizeX` and `raw` take for M tokens of K: xq and xd bytes. The same for every kernel (4·M·K and
   * 4·M·K/32), so a caller may also size it by that rule.
   */
  scratchBytes(m: number, k: number): { xq: number; xd: number } {
    return { xq: (X_SLOT * m * k) / 32, xd: (4 * m * k) / 32 };
  }

  /** Reserves `bytes` (16-byte aligned) in the memory; returns the pointer. */
  alloc(bytes: number): number {
    const ptr = Math.ceil(this.top / 16) * 16;
    const end = ptr + bytes;
    // the prefill tiles read up to `touch` bytes past a matrix's end (kernel-lib.ts emitMatmul4): kept in the memory
    const need = end + this.config.touch;
    if (need > this.memory.buffer.byteLength) this.memory.grow(Math.ceil((need - this.memory.buffer.byteLength) / PAGE));
    this.top = end;
    return ptr;
  }

  /** Copies `bytes` (e.g. a tensor's GGUF blocks) into the memory; returns the pointer. */
  upload(bytes: Uint8Array): number {
    const ptr = this.alloc(bytes.byteLength);
    new Uint8Array(this.memory.buffer, ptr, bytes.byteLength).set(bytes);
    return ptr;
  }

  /**
   * Puts a matrix's GGUF blocks, (N, K) `dtype`, into the memory in `layout` ('gguf': copied as they are; 'split',
   * 'split4': scales decoded to f32 and quants packed apart, see kernel-lib.ts), by default the kernel's
   * (DEFAULT_LAYOUTS).
   */
  weight(dtype: CpuMatmulDtype, blocks: Uint8Array, n: number, k: number, layout: WeightLayout = this.config.layouts[dtype]): CpuWeight {
    const rb = rowBytes(dtype, k); // throws unless K is a positive multiple of 32
    if (!Number.isInteger(n) || n <= 0) throw new ShapeError(`cpu-matmul ${dtype}`, 'n', 'a positive integer', String(n));
    if (blocks.byteLength !== n * rb) throw new ShapeError(`cpu-matmul ${dtype}`, 'blocks', `(${n}, ${k}) ${dtype} = ${n * rb} bytes`, `${blocks.byteLength} bytes`);
    const u = FORMATS[dtype];
    const bytes = layoutBytes(u, layout, n, k);
    if (layout === 'split4w' && !this.config.kernel.startsWith('relaxed')) throw new RangeError(`the '${this.config.kernel}' kernel does not read the 'split4w' layout (the relaxed kernels' own): use 'split4'`);
    const offset = this.config.kernel === 'relaxed-u8' && dtype === 'q8_0' && layout !== 'gguf';
    const wide = this.config.kernel.startsWith('relaxed') && !offset && layout !== 'split4w' && !u.relaxedExact(blocks);
    if (layout === 'gguf') return { dtype, layout, n, k, ptr: this.upload(blocks), bytes, wide };
    const w: CpuWeight = { dtype, layout, n, k, ptr: this.alloc(bytes), bytes, wide, offset };
    const { scales, quants, slot, quantByte } = this.splitViews(w);
    scales.fill(0, (n * k) / 32); // 'split4': the padding rows are zero blocks
    quants.fill(0, ((n * k) / 32) * u.quantBytes);
    const nb = k / 32;
    const words = layout === 'split4w' ? new Uint32Array(quants.buffer, quants.byteOffset, quants.byteLength / 4) : undefined;
    const file = new DataView(blocks.buffer, blocks.byteOffset, blocks.byteLength);
    for (let r = 0; r < n; r++) {
      for (let b = 0; b < nb; b++) {
        const o = (r * nb + b) * u.bytes;
        const i = slot(r, b);
        scales[i] = f16ToF32(blocks[o] | (blocks[o + 1] << 8));
        if (!words) quants.set(blocks.subarray(o + 2, o + u.bytes), i * u.quantBytes);
        else for (let j = 0; j < u.quantBytes; j += 4) words[quantByte(r, b, j) >> 2] = file.getUint32(o + 2 + j, true);
      }
    }
    if (offset) for (let j = 0; j < quants.length; j++) quants[j] ^= 0x80; // q + 128 as u8
    return w;
  }

  /**
   * Row `r` of a weight matrix, dequantized into out[at .. at + K), in any layout (an embedding lookup in a tied LM
   * head, say): read it through here rather than from the memory, since 'split4' interleaves rows in fours.
   */
  weightRow(w: CpuWeight, r: number, out: Float32Array, at = 0): void {
    if (!(Number.isInteger(r) && r >= 0 && r < w.n)) throw new RangeError(`row ${r} of a (${w.n}, ${w.k}) matrix`);
    const nb = w.k / 32;
    const u = FORMATS[w.dtype];
    const mem = new Uint8Array(this.memory.buffer);
    const split = w.layout === 'gguf' ? undefined : this.splitViews(w);
    for (let b = 0; b < nb; b++) {
      let d: number;
      let byte: (j: number) => number; // the block's quant byte j
      if (split) {
        d = split.scales[split.slot(r, b)];
        byte = (j) => mem[split.quantsAt + split.quantByte(r, b, j)];
      } else {
        const o = w.ptr + (r * nb + b) * u.bytes;
        d = f16ToF32(mem[o] | (mem[o + 1] << 8));
        byte = (j) => mem[o + 2 + j];
      }
      const o = at + 32 * b;
      if (w.offset) {
        const stored = byte;
        byte = (j) => stored(j) ^ 0x80;
      }
      if (w.dtype === 'q4_0') {
        for (let j = 0; j < 16; j++) {
          out[o + j] = ((byte(j) & 15) - 8) * d;
          out[o + 16 + j] = ((byte(j) >> 4) - 8) * d;
        }
      } else for (let j = 0; j < 32; j++) out[o + j] = ((byte(j) << 24) >> 24) * d;
    }
  }

  /**
   * A 'split'/'split4'/'split4w' matrix's scales and quants in the memory, the slot of row r's block b in both, and
   * where quant byte j of that block sits in the quants.
   */
  private splitViews(w: CpuWeight): { scales: Float32Array; quants: Uint8Array; quantsAt: number; slot: (r: number, b: number) => number; quantByte: (r: number, b: number, j: number) => number } {
    const u = FORMATS[w.dtype];
    const nb = w.k / 32;
    const count = ((interleaved(w.layout) ? Math.ceil(w.n / 4) * 4 : w.n) * w.k) / 32;
    const quantsAt = w.ptr + w.bytes - count * u.quantBytes;
    // block b of row r is slot r·nb + b ('split') or ((r >> 2)·nb + b)·4 + (r & 3) ('split4')
    const slot = interleaved(w.layout) ? (r: number, b: number) => (((r >> 2) * nb + b) << 2) + (r & 3) : (r: number, b: number) => r * nb + b;
    // 'split4w': byte j of row r at (j >> 2)·16 + (r & 3)·4 + (j & 3) of its group's block (slot − (r & 3))
    const quantByte =
      w.layout === 'split4w'
        ? (r: number, b: number, j: number) => (slot(r, b) - (r & 3)) * u.quantBytes + (j >> 2) * 16 + (r & 3) * 4 + (j & 3)
        : (r: number, b: number, j: number) => slot(r, b) * u.quantBytes + j;
    return { scales: new Float32Array(this.memory.buffer, w.ptr, count), quants: new Uint8Array(this.memory.buffer, quantsAt, count * u.quantBytes), quantsAt, slot, quantByte };
  }

  /**
   * y = x·Wᵀ: x (M, K) f32, W (N, K) from `weight`, y (M, N) f32. x is quantized to q8_0 per 32 elements first, as
   * llama.cpp's CPU path does. M below the prefill tile runs the decode kernel.
   */
  matmul(w: CpuWeight, x: Float32Array, m = 1, out = new Float32Array(m * w.n)): Float32Array {
    const { n, k } = w;
    const kernel = `cpu-matmul ${w.dtype}`;
    if (!Number.isInteger(m) || m <= 0) throw new ShapeError(kernel, 'm', 'a positive integer', String(m));
    if (x.length !== m * k) throw new ShapeError(kernel, 'x', `(${m}, ${k}) = ${m * k} floats`, `${x.length}`);
    if (out.length !== m * n) throw new ShapeError(kernel, 'out', `(${m}, ${n}) = ${m * n} floats`, `${out.length}`);
    const { xPtr, xqPtr, xdPtr, yPtr } = this.scratchFor(m, k, n);
    new Float32Array(this.memory.buffer, xPtr, m * k).set(x);
    this.exports.quantize_x(xPtr, xqPtr, xdPtr, (m * k) / 32);
    this.raw(w, xqPtr, xdPtr, yPtr, m);
    out.set(new Float32Array(this.memory.buffer, yPtr, m * n));
    return out;
  }

  /**
   * Runs the kernel for `w` on quantized x already in the memory (benchmarks; layouts as kernel-lib.ts documents):
   * the decode tiling below the prefill tile's M, else the prefill one, unless `tiling` names one.
   */
  raw(w: CpuWeight, xq: number, xd: number, y: number, m: number, tiling: 'gemv' | 'gemm' = this.tiling(w, m)): void {
    const name = `${tiling}_${w.dtype}_${w.layout}${w.wide ? '_wide' : ''}`;
    const kernel = this.exports[name];
    const { n, k, ptr } = w;
    const pool = this.pool;
    if (!pool || n * k * m < pool.splitFrom || pool.threads.closed) return kernel(ptr, xq, xd, y, n, k, m, 0, n);
    // each thread a run of rows, whole groups of 4 in the interleaved layouts; this thread the first
    const T = pool.threads.threads;
    const step = interleaved(w.layout) ? 4 : 1;
    const units = Math.ceil(n / step);
    const bound = (t: number) => Math.min(n, Math.round((units * t) / T) * step);
    const args = Array.from({ length: T - 1 }, (_, h) => [ptr, xq, xd, y, n, k, m, bound(h + 1), bound(h + 2)]);
    pool.threads.run(pool.fns.get(name)!, args, () => kernel(ptr, xq, xd, y, n, k, m, 0, bound(1)));
  }

  /** The tiling for M tokens: the decode tiles below `prefillFrom` ('split4') or `tokens` (the other layouts). */
  private tiling(w: CpuWeight, m: number): 'gemv' | 'gemm' {
    return m < (interleaved(w.layout) ? this.config.prefillFrom : this.config.tokens) ? 'gemv' : 'gemm';
  }

  /** Quantizes `blocks` 32-float blocks at x into the (xq, xd) layout (benchmarks and tests). */
  quantizeX(x: number, xq: number, xd: number, blocks: number): void {
    this.exports.quantize_x(x, xq, xd, blocks);
  }

  /** Scratch for x (M·K f32), xq and xd (scratchBytes) and y (M·N f32), reused across calls, grown as needed. */
  private scratchFor(m: number, k: number, n: number): { xPtr: number; xqPtr: number; xdPtr: number; yPtr: number } {
    const align = (v: number) => Math.ceil(v / 16) * 16;
    const xBytes = align(4 * m * k);
    const { xq, xd } = this.scratchBytes(m, k);
    const xqBytes = align(xq);
    const xdBytes = align(xd);
    const bytes = xBytes + xqBytes + xdBytes + 4 * m * n;
    if (bytes > this.scratch.bytes) this.scratch = { ptr: this.alloc(bytes), bytes };
    const p = this.scratch.ptr;
    return { xPtr: p, xqPtr: p + xBytes, xdPtr: p + xBytes + xqBytes, yPtr: p + xBytes + xqBytes + xdBytes };
  }
}
