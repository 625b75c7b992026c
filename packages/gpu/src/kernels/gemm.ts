// GEMM on weights in their stored format, for T > 1 tokens at once (prefill, speculative verify,
// batched decode): each weight chunk is dequantized once and reused across several tokens. Two
// variants: 'tiled' (shaders/matmul/gemm.wgsl, x shared through workgroup memory, for real GPUs) and
// 'rows' (gemm.rows.wgsl, no barriers, for software adapters such as SwiftShader).
// T = 1 works too, but createGemv is the faster decode path.

import tiledSrc from '../../../../shaders/matmul/gemm.wgsl?raw';
import rowsSrc from '../../../../shaders/matmul/gemm.rows.wgsl?raw';
import { isSoftwareAdapter, type Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, requireBytes, requireDim, unusedBinding, withParams } from '../kernel.ts';
import { ShapeError } from '../errors.ts';
import type { WeightDtype } from '../formats/blocks.ts';
import { CHUNK_ELEMS, requireWeightDtype, weightGemmWgsl, type WeightTensor } from '../weights.ts';
import matmulIo from '../../../../shaders/lib/matmul-io.wgsl?raw';
import geluErf from '../../../../shaders/lib/gelu-erf.wgsl?raw';

export type GemmVariant = 'tiled' | 'rows';

/** Register-array caps in gemm.wgsl (MAX_ROWS, MAX_TOKENS). */
const MAX_ROWS = 4;
const MAX_TOKENS = 16;
/** The fixed tile of one invocation in gemm.rows.wgsl (rows × tokens). */
const ROWS_TILE = 8;
const ROWS_TOKENS = 8;

export interface GemmOptions {
  dtype: WeightDtype | string;
  /** Add a per-row f32 bias (Qwen2 q/k/v). */
  bias?: boolean;
  /** y += W·x instead of y = W·x (residual fused into the output projection). */
  accumulate?: boolean;
  /**
   * An activation applied to W·x (+ bias) before the store: 'gelu-erf' (GELU with erf, lib/gelu-erf.wgsl), a BERT up
   * projection's; 'tanh' (its input clamped to ±15, where f32 tanh is ±1 already; CPU twin Math.tanh), a reranker
   * head's dense layer. Not with accumulate.
   */
  activation?: 'gelu-erf' | 'tanh';
  /**
   * 'rows' (no barriers; each invocation owns 8 rows × 8 tokens) or
   * 'tiled' (x tiles in workgroup memory). Default: 'rows' on a software adapter (isSoftwareAdapter: SwiftShader, llvmpipe), else 'tiled'.
   */
  variant?: GemmVariant;
  /** Invocations per workgroup (default 64). */
  workgroupSize?: number;
  /** Tiled only: weight rows each invocation owns, 1..4 (default 2). 'rows' owns a fixed 8 rows × 8 tokens. */
  rowsPerInvocation?: number;
  /** Tiled only: tokens per tile, 1..16 (default 8). */
  tokensPerWorkgroup?: number;
  /** Tiled only: elements of K staged in workgroup memory per step (default 128; a multiple of the format's chunk). */
  kTile?: number;
}

export interface GemmArgs {
  weight: WeightTensor;
  /** (T, K) f32. */
  x: BufferRef;
  /** (T, N) f32. */
  y: BufferRef;
  /** f32 indexed like y's columns (yColumn + row), when created with bias. */
  bias?: BufferRef;
  /** T: tokens (rows of x and y). */
  tokens: number;
  /** Elements between two tokens' outputs in y (default N). */
  yStride?: number;
  /** y column of the weight's row 0 (default 0): several GEMMs fill column ranges of one wider y. */
  yColumn?: number;
}

export interface Gemm {
  readonly dtype: WeightDtype;
  readonly variant: GemmVariant;
  encode(pass: GPUComputePassEncoder, args: GemmArgs): void;
}

/**
 * Y (T, N) (+)= X (T, K) · Wᵀ (+ bias), W an (N, K) WeightTensor in any supported format, split in parts or not.
 *
 * @example
 * const gemm = createGemm(gpu, { dtype: 'q4_K', accumulate: true });
 * gemm.encode(pass, { weight: wo, x: attnOut, y: residual, tokens: T });
 */
export function createGemm(gpu: Gpu, options: GemmOptions): Gemm {
  requireWeightDtype(options.dtype);
  const dtype = options.dtype;
  const variant: GemmVariant = options.variant ?? (isSoftwareAdapter(gpu.adapterInfo) ? 'rows' : 'tiled');
  if (variant !== 'tiled' && variant !== 'rows') {
    throw new TypeError(`gemm: variant must be 'tiled' or 'rows', got '${String(variant)}'`);
  }
  const name = `gemm(${dtype}, ${variant})`;
  const tiled = variant === 'tiled';
  const wg = options.workgroupSize ?? 64;
  const rows = tiled ? options.rowsPerInvocation ?? 2 : ROWS_TILE;
  const tokens = tiled ? options.tokensPerWorkgroup ?? 8 : ROWS_TOKENS;
  const kTile = options.kTile ?? 128;
  const chunk = CHUNK_ELEMS[dtype];
  const bias = options.bias ?? false;
  const bad = (what: string, want: string, got: number) => new ShapeError(name, what, want, String(got));
  if (!Number.isInteger(wg) || wg < 1 || wg > gpu.limits.maxComputeInvocationsPerWorkgroup) {
    throw bad('workgroupSize', `an integer in 1..${gpu.limits.maxComputeInvocationsPerWorkgroup}`, wg);
  }
  if (options.activation !== undefined && options.activation !== 'gelu-erf' && options.activation !== 'tanh') {
    throw new TypeError(`${name}: activation must be 'gelu-erf', 'tanh' or left out, got '${String(options.activation)}'`);
  }
  if (options.activation && options.accumulate) throw new TypeError(`${name}: an activation applies to W·x + bias alone, so not with accumulate`);
  const act = options.activation === 'gelu-erf' ? 1 : options.activation === 'tanh' ? 2 : 0;
  const constants: Record<string, number> = { WG_SIZE: wg, HAS_BIAS: bias ? 1 : 0, ACCUMULATE: options.accumulate ? 1 : 0, ACT: act };
  if (tiled) {
    if (!Number.isInteger(rows) || rows < 1 || rows > MAX_ROWS) throw bad('rowsPerInvocation', `an integer in 1..${MAX_ROWS}`, rows);
    if (!Number.isInteger(tokens) || tokens < 1 || tokens > MAX_TOKENS) throw bad('tokensPerWorkgroup', `an integer in 1..${MAX_TOKENS}`, tokens);
    if (!Number.isInteger(kTile) || kTile <= 0 || kTile % chunk !== 0 || kTile % 4 !== 0) {
      throw bad('kTile', `a positive multiple of ${Math.max(chunk, 4)} for ${dtype}`, kTile);
    }
    const tileBytes = tokens * kTile * 4;
    if (tileBytes > gpu.limits.maxComputeWorkgroupStorageSize) {
      throw bad('kTile', `at most ${gpu.limits.maxComputeWorkgroupStorageSize / 4 / tokens} with ${tokens} tokens per tile (workgroup memory)`, kTile);
    }
    Object.assign(constants, { ROWS: rows, TOKENS: tokens, K_TILE: kTile });
  } else {
    for (const opt of ['rowsPerInvocation', 'tokensPerWorkgroup', 'kTile'] as const) {
      if (options[opt] !== undefined) {
        throw new TypeError(`${name}: '${opt}' tunes the tiled variant; the rows variant has a fixed ${ROWS_TILE} × ${ROWS_TOKENS} tile per invocation`);
      }
    }
  }
  const cached = gpu.pipelines.get({
    name: 'gemm',
    variant: `${dtype}+${variant}`,
    code: `${variant === 'rows' ? rowsSrc : tiledSrc}\n${matmulIo}\n${geluErf}\n${weightGemmWgsl(dtype)}`,
    bindings: withParams('read', 'read', 'storage', 'read'),
    constants,
  });
  const tileRows = wg * rows;
  return {
    dtype,
    variant,
    encode(pass, a) {
      const w = a.weight;
      if (w.dtype !== dtype) throw new ShapeError(name, 'weight', `a ${dtype} tensor`, `${w.dtype} tensor '${w.label}'`);
      requireDim(name, 'tokens', a.tokens);
      const column = a.yColumn ?? 0;
      const stride = a.yStride ?? w.n;
      if (!Number.isInteger(column) || column < 0 || !Number.isInteger(stride) || column + w.n > stride) {
        throw new ShapeError(name, 'yColumn/yStride', `columns ${column}..${column + w.n} within a row of yStride elements`, `yStride ${stride}`);
      }
      requireBytes(name, 'x', a.x, a.tokens * w.k * 4);
      requireBytes(name, 'y', a.y, ((a.tokens - 1) * stride + column + w.n) * 4);
      if (bias) {
        if (!a.bias) throw new TypeError(`${name}: created with bias, so 'bias' is required`);
        requireBytes(name, 'bias', a.bias, (column + w.n) * 4);
      }
      const max = gpu.limits.maxComputeWorkgroupsPerDimension;
      const wgy = Math.ceil(a.tokens / tokens);
      if (wgy > max) throw new ShapeError(name, 'tokens', `at most ${max * tokens}`, String(a.tokens));
      for (const part of w.parts) {
        const wgx = Math.ceil(part.rows / tileRows);
        if (wgx > max) throw new ShapeError(name, 'weight rows per part', `at most ${max * tileRows}`, String(part.rows));
        const params = new Params(8).u32(stride).u32(w.k).u32(w.rowBytes).u32(column + part.row0).u32(part.rows).u32(a.tokens).u32(0).u32(0);
        dispatch(gpu, pass, cached, `${name} ${w.label}`, params, [part.buffer, a.x, a.y, bias ? a.bias! : unusedBinding(gpu)], [wgx, wgy]);
      }
    },
  };
}
