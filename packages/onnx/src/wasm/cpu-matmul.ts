// intab's own CPU matmul kernels for GGUF q8_0/q4_0 weights: one wasm SIMD128 module (built by wasm-module.ts from
// the emitters in kernel-lib.ts, gemv-q8_0.ts, gemv-q4_0.ts) over one linear memory the host owns, with the weights
// copied in as the file stores them. It exists because onnxruntime-web's quantized ops do not stream 4-bit weights on
// the CPU (MatMulNBits dequantizes the whole matrix per call), so the no-GPU path reads f32 weights: 7× the bytes.
// Not wired into the engine yet; see the report of issue 28 for the runner it is meant for.
//
// Exports of the module, all (w, xq, xd, y, n, k, m) → () except quantize_x (x, xq, xd, blocks) → ():
//   gemv_<dtype>_<layout>: tiles of ROWS weight rows × 1 token (decode: each x vector reused across ROWS rows)
//   gemm_<dtype>_<layout>: tiles of 1 weight row × TOKENS tokens (prefill: each unpacked block reused across TOKENS)
// for dtype q8_0 | q4_0 and layout gguf | split (kernel-lib.ts WeightLayout).
// Pointers are byte offsets into the memory; layouts as kernel-lib.ts documents them.

import { ShapeError, f16ToF32, rowBytes } from '@intab/gpu';
import { emitMatmul, emitQuantizeX, layoutBytes, type BlockUnpacker, type WeightLayout } from './kernel-lib.ts';
import { Q4_0_UNPACK } from './gemv-q4_0.ts';
import { Q8_0_UNPACK } from './gemv-q8_0.ts';
import { I32, WasmModule } from './wasm-module.ts';

/** The weight formats the CPU kernels read. */
export type CpuMatmulDtype = 'q8_0' | 'q4_0';

const UNPACKERS: Readonly<Record<CpuMatmulDtype, BlockUnpacker>> = { q8_0: Q8_0_UNPACK, q4_0: Q4_0_UNPACK };
const PAGE = 65536;

/**
 * 'split' by default: on one thread the kernels are bound by instructions, not by bytes (15 G weights/s from cache,
 * 3–5 GB/s from memory), and decoding the inline f16 scale costs a dozen scalar ops per block; measured on the
 * SmolLM2-135M and Qwen3-0.6B decode shapes, 'split' is 1.3–1.6× faster summed over a step despite 11% (q4_0) or
 * 6% (q8_0) more bytes. 'gguf' stays for memory-tight loads (weights byte-identical to the file).
 */
export const DEFAULT_LAYOUT: WeightLayout = 'split';

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
}

export interface CpuMatmulOptions {
  /** Weight rows per decode tile (1–4; default 2: measured against 1 and 4 on SmolLM2/Qwen3 shapes, see the report). */
  readonly rows?: number;
  /** Tokens per prefill tile (1–4; default 4). */
  readonly tokens?: number;
  /** Initial memory in 64 KiB pages (it grows as weights are uploaded). */
  readonly initialPages?: number;
}

type Kernel = (w: number, xq: number, xd: number, y: number, n: number, k: number, m: number) => void;

/** The module's binary for a tile configuration (exported for tests that validate the encoding). */
export function buildCpuMatmulModule(rows = 4, tokens = 4): Uint8Array<ArrayBuffer> {
  const mod = new WasmModule({ memoryPages: 1 });
  emitQuantizeX(mod.func('quantize_x', [I32, I32, I32, I32], []));
  for (const [dtype, u] of Object.entries(UNPACKERS)) {
    for (const layout of ['gguf', 'split'] as const) {
      emitMatmul(mod.func(`gemv_${dtype}_${layout}`, [I32, I32, I32, I32, I32, I32, I32], []), u, layout, rows, 1);
      emitMatmul(mod.func(`gemm_${dtype}_${layout}`, [I32, I32, I32, I32, I32, I32, I32], []), u, layout, 1, tokens);
    }
  }
  return mod.encode();
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
    private readonly tokens: number,
  ) {}

  static async create(options: CpuMatmulOptions = {}): Promise<CpuMatmul> {
    const rows = options.rows ?? 2;
    const tokens = options.tokens ?? 4;
    const memory = new WebAssembly.Memory({ initial: Math.max(1, options.initialPages ?? 16) });
    const module = await WebAssembly.compile(buildCpuMatmulModule(rows, tokens));
    const instance = await WebAssembly.instantiate(module, { env: { memory } });
    return new CpuMatmul(memory, instance.exports as never, tokens);
  }

  /** Reserves `bytes` (16-byte aligned) in the memory; returns the pointer. */
  alloc(bytes: number): number {
    const ptr = Math.ceil(this.top / 16) * 16;
    const end = ptr + bytes;
    if (end > this.memory.buffer.byteLength) this.memory.grow(Math.ceil((end - this.memory.buffer.byteLength) / PAGE));
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
   * Puts a matrix's GGUF blocks, (N, K) `dtype`, into the memory in `layout` ('gguf': copied as they are; 'split':
   * scales decoded to f32 and quants packed apart, see kernel-lib.ts).
   */
  weight(dtype: CpuMatmulDtype, blocks: Uint8Array, n: number, k: number, layout: WeightLayout = DEFAULT_LAYOUT): CpuWeight {
    const rb = rowBytes(dtype, k); // throws unless K is a positive multiple of 32
    if (!Number.isInteger(n) || n <= 0) throw new ShapeError(`cpu-matmul ${dtype}`, 'n', 'a positive integer', String(n));
    if (blocks.byteLength !== n * rb) throw new ShapeError(`cpu-matmul ${dtype}`, 'blocks', `(${n}, ${k}) ${dtype} = ${n * rb} bytes`, `${blocks.byteLength} bytes`);
    const u = UNPACKERS[dtype];
    const bytes = layoutBytes(u, layout, n, k);
    if (layout === 'gguf') return { dtype, layout, n, k, ptr: this.upload(blocks), bytes };
    const ptr = this.alloc(bytes);
    const count = (n * k) / 32;
    const scales = new Float32Array(this.memory.buffer, ptr, count);
    const quants = new Uint8Array(this.memory.buffer, ptr + bytes - count * u.quantBytes, count * u.quantBytes);
    for (let b = 0; b < count; b++) {
      const o = b * u.bytes;
      scales[b] = f16ToF32(blocks[o] | (blocks[o + 1] << 8));
      quants.set(blocks.subarray(o + 2, o + u.bytes), b * u.quantBytes);
    }
    return { dtype, layout, n, k, ptr, bytes };
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
  raw(w: CpuWeight, xq: number, xd: number, y: number, m: number, tiling: 'gemv' | 'gemm' = m < this.tokens ? 'gemv' : 'gemm'): void {
    this.exports[`${tiling}_${w.dtype}_${w.layout}`](w.ptr, xq, xd, y, w.n, w.k, m);
  }

  /** Quantizes `blocks` 32-float blocks at x into the (xq, xd) layout (benchmarks and tests). */
  quantizeX(x: number, xq: number, xd: number, blocks: number): void {
    this.exports.quantize_x(x, xq, xd, blocks);
  }

  /** Scratch for x (M·K f32), xq (M·K i16), xd (M·K/32 f32) and y (M·N f32), reused across calls, grown as needed. */
  private scratchFor(m: number, k: number, n: number): { xPtr: number; xqPtr: number; xdPtr: number; yPtr: number } {
    const align = (v: number) => Math.ceil(v / 16) * 16;
    const xBytes = align(4 * m * k);
    const xqBytes = align(2 * m * k);
    const xdBytes = align((m * k) / 8);
    const bytes = xBytes + xqBytes + xdBytes + 4 * m * n;
    if (bytes > this.scratch.bytes) this.scratch = { ptr: this.alloc(bytes), bytes };
    const p = this.scratch.ptr;
    return { xPtr: p, xqPtr: p + xBytes, xdPtr: p + xBytes + xqBytes, yPtr: p + xBytes + xqBytes + xdBytes };
  }
}
