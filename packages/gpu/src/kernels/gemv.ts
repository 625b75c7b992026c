// GEMV on weights in their stored format (decode: one token per sequence; steps of a few tokens: batched
// decode, speculative verify). One vector runs shaders/matmul/gemv.wgsl (or its subgroup sibling); B ≥ 2
// vectors run gemv.multi.wgsl (or its subgroup sibling), which dequantizes each weight chunk once for a
// group of up to 4 vectors instead of once per vector. Every variant can fuse the RMSNorm of its input and
// the gated activation of a [gate; up] weight (lib/gemv-fusion.wgsl), so a decode layer's norm + q|k|v and
// norm + gate|up + SwiGLU are one dispatch each.

import plainSrc from '../../../../shaders/matmul/gemv.wgsl?raw';
import subgroupSrc from '../../../../shaders/matmul/gemv.subgroup.wgsl?raw';
import multiSrc from '../../../../shaders/matmul/gemv.multi.wgsl?raw';
import multiSubgroupSrc from '../../../../shaders/matmul/gemv.multi.subgroup.wgsl?raw';
import multiLib from '../../../../shaders/lib/weights/multi.wgsl?raw';
import vec4Multi from '../../../../shaders/lib/weights/vec4.multi.wgsl?raw';
import q8_0Multi from '../../../../shaders/lib/weights/q8_0.multi.wgsl?raw';
import q4_0Multi from '../../../../shaders/lib/weights/q4_0.multi.wgsl?raw';
import q4_KMulti from '../../../../shaders/lib/weights/q4_K.multi.wgsl?raw';
import q6_KMulti from '../../../../shaders/lib/weights/q6_K.multi.wgsl?raw';
import matmulIo from '../../../../shaders/lib/matmul-io.wgsl?raw';
import fusion from '../../../../shaders/lib/gemv-fusion.wgsl?raw';
import type { CachedPipeline } from '../pipeline-cache.ts';
import { isSoftwareAdapter, type Gpu } from '../device.ts';
import type { BufferRef } from '../kernel.ts';
import { Params, dispatch, requireBytes, requireDim, unusedBinding, withParams } from '../kernel.ts';
import { ShapeError, UnsupportedError } from '../errors.ts';
import type { WeightDtype } from '../formats/blocks.ts';
import { requireWeightDtype, weightDotWgsl, weightFormatWgsl, type WeightTensor } from '../weights.ts';

export interface GemvOptions extends GemvTuning {
  dtype: WeightDtype | string;
  /** Add a per-row f32 bias (Qwen2 q/k/v). */
  bias?: boolean;
  /** y += W·x instead of y = W·x (residual fused into the output projection). */
  accumulate?: boolean;
  /**
   * RMSNorm fused before: y = W·(x / rms(x) ⊙ normWeight), x being the residual stream; each encode passes
   * `normWeight` and `eps`.
   */
  norm?: boolean;
  /**
   * Gated activation fused after: the weight is [gate; up] (2F, K) in one part and y (B, F) = act(gate·x) ⊙ (up·x),
   * act SiLU ('silu': SwiGLU) or tanh GELU ('gelu_tanh': GeGLU). Not with bias or accumulate.
   */
  gated?: 'silu' | 'gelu_tanh';
  /**
   * B ≥ 2 vectors: the multi-vector kernel (default), with its own launch shape (fields left out take
   * their defaults; `subgroups` defaults to the one-vector kernel's when that is given), or `false` for
   * the one-vector kernel over B grid rows (each vector re-reads and re-dequantizes every weight: only
   * for comparison).
   */
  multi?: boolean | GemvTuning;
}

/**
 * Launch shape of one GEMV kernel (the one-vector or the multi-vector one). Defaults:
 *   software adapters: the plain variant, 4 invocations per workgroup (one SwiftShader SIMD group), 16
 *     rows each: measured fastest on SwiftShader (which has subgroups) for one vector and for several,
 *     ahead of the subgroup variant (16 rows per subgroup, 64 per workgroup: the default before B ≥ 2
 *     had its own kernel) and of wider workgroups, which leave cores idle on 576-row matrices
 *   GPUs with subgroups: the subgroup variant, 32 rows per workgroup, 4 per subgroup
 *   GPUs without: the plain variant, 64 invocations per workgroup, 2 rows each
 * (GPUs: conservative, few rows per lane for parallelism; not measured for the multi-vector kernel.)
 */
export interface GemvTuning {
  /** Use the subgroup variant (the device must have subgroups); default on GPUs that have them. */
  subgroups?: boolean;
  workgroupSize?: number;
  /** Subgroup variant only: rows per workgroup. */
  rowsPerWorkgroup?: number;
  /** Rows an invocation (plain) or subgroup (subgroups) dots with one x chunk, 1..16 (MAX_ROWS in the kernels). */
  rowsPerInvocation?: number;
}

export interface GemvArgs {
  weight: WeightTensor;
  /** (B, K) f32. */
  x: BufferRef;
  /** (B, N) f32. */
  y: BufferRef;
  /** f32 indexed like y's columns (yColumn + row), when created with bias. */
  bias?: BufferRef;
  /** Vectors B sharing this weight (default 1); any B, computed in groups of up to 4. */
  batch?: number;
  /** (K) f32: the RMSNorm weight, when created with norm. */
  normWeight?: BufferRef;
  /** The RMSNorm epsilon, when created with norm. */
  eps?: number;
  /** Elements between two vectors' outputs in y (default: the output rows, N or F when gated). */
  yStride?: number;
  /** y column of the weight's row 0 (default 0): several GEMVs fill column ranges of one wider y. */
  yColumn?: number;
}

export interface Gemv {
  readonly dtype: WeightDtype;
  encode(pass: GPUComputePassEncoder, args: GemvArgs): void;
}

/**
 * y (B, N) (+)= x (B, K) · Wᵀ (+ bias), W an (N, K) WeightTensor in any supported format. One vector runs
 * the one-vector kernel; B ≥ 2 run the multi-vector kernel in groups of 4 (a rest of 1 runs the
 * one-vector kernel).
 *
 * @example
 * const gemv = createGemv(gpu, { dtype: 'q4_0' });
 * gemv.encode(pass, { weight, x, y });                 // decode: one token
 * gemv.encode(pass, { weight, x: x4, y: y4, batch: 4 }); // 4 sequences, or one verify step of 4 tokens
 */
export function createGemv(gpu: Gpu, options: GemvOptions): Gemv {
  requireWeightDtype(options.dtype);
  const dtype = options.dtype;
  const bias = options.bias ?? false;
  const norm = options.norm ?? false;
  const gated = options.gated;
  if (gated && (bias || options.accumulate)) throw new TypeError(`gemv(${dtype}): a gated GEMV takes no bias and does not accumulate`);
  if (gated && gated !== 'silu' && gated !== 'gelu_tanh') throw new TypeError(`gemv(${dtype}): gated is 'silu' or 'gelu_tanh', not '${gated}'`);
  const io = { HAS_BIAS: bias ? 1 : 0, ACCUMULATE: options.accumulate ? 1 : 0, NORM: norm ? 1 : 0, GATED: gated === 'silu' ? 1 : gated ? 2 : 0 };
  const bindings = withParams('read', 'read', 'storage', 'read', 'read');
  const lib = `${matmulIo}\n${fusion}`;

  // One vector: gemv.wgsl / gemv.subgroup.wgsl.
  const one = launch(gpu, 'gemv', options);
  const single = gpu.pipelines.get({
    name: 'gemv',
    variant: `${dtype}${one.subgroups ? '+subgroups' : ''}`,
    code: `${one.subgroups ? subgroupSrc : plainSrc}\n${lib}\n${weightDotWgsl(dtype)}`,
    bindings,
    constants: { ...one.constants, ...io },
  });

  // B ≥ 2: gemv.multi.wgsl / gemv.multi.subgroup.wgsl, one pipeline per WIDTH (2 for B = 2, else 4).
  // Compiled here, not on first use, so that a runner's warmup (which creates its GEMVs) covers batched
  // and verify steps too.
  const m = options.multi ?? true;
  const many = m === false ? undefined : launch(gpu, 'gemv multi', { subgroups: options.subgroups, ...(m === true ? {} : m) });
  const multiPipeline = (width: number): CachedPipeline =>
    gpu.pipelines.get({
      name: 'gemv.multi',
      variant: `${dtype}${many!.subgroups ? '+subgroups' : ''}`,
      code: `${many!.subgroups ? multiSubgroupSrc : multiSrc}\n${lib}\n${weightFormatWgsl(dtype)}\n${multiLib}\n${MULTI_DOT[dtype]}`,
      bindings,
      constants: { ...many!.constants, ...io, WIDTH: width },
    });
  const [multi2, multi4] = many ? [multiPipeline(2), multiPipeline(4)] : [single, single];

  const name = `gemv(${dtype}${norm ? '+norm' : ''}${gated ? `+${gated}` : ''})`;
  return {
    dtype,
    encode(pass, a) {
      const w = a.weight;
      if (w.dtype !== dtype) throw new ShapeError(name, 'weight', `a ${dtype} tensor`, `${w.dtype} tensor '${w.label}'`);
      const batch = a.batch ?? 1;
      requireDim(name, 'batch', batch);
      if (gated && (w.parts.length !== 1 || w.n % 2 !== 0)) {
        throw new ShapeError(name, 'weight', 'a [gate; up] tensor of 2F rows in one part', `'${w.label}' of ${w.n} rows in ${w.parts.length} parts`);
      }
      const outRows = gated ? w.n / 2 : w.n;
      const column = a.yColumn ?? 0;
      const stride = a.yStride ?? outRows;
      if (!Number.isInteger(column) || column < 0 || !Number.isInteger(stride) || column + outRows > stride) {
        throw new ShapeError(name, 'yColumn/yStride', `columns ${column}..${column + outRows} within a row of yStride elements`, `yStride ${stride}`);
      }
      requireBytes(name, 'x', a.x, batch * w.k * 4);
      requireBytes(name, 'y', a.y, ((batch - 1) * stride + column + outRows) * 4);
      if (bias) {
        if (!a.bias) throw new TypeError(`${name}: created with bias, so 'bias' is required`);
        requireBytes(name, 'bias', a.bias, (column + w.n) * 4);
      }
      if (norm) {
        if (!a.normWeight || a.eps === undefined) throw new TypeError(`${name}: created with norm, so 'normWeight' and 'eps' are required`);
        requireBytes(name, 'normWeight', a.normWeight, w.k * 4);
      }
      // Dispatches of [pipeline, rows per workgroup, first vector, grid rows]: the one-vector kernel has a
      // grid row per vector; the multi-vector kernel one per group of 4, and a rest of 2 (WIDTH 2) or 1
      // (the one-vector kernel) runs on its own.
      const plan: [CachedPipeline, number, number, number][] = [];
      if (batch === 1 || many === undefined) {
        plan.push([single, one.rows, 0, batch]);
      } else {
        const groups = Math.floor(batch / 4);
        const rest = batch % 4;
        if (groups > 0) plan.push([multi4, many.rows, 0, groups]);
        if (rest === 1) plan.push([single, one.rows, 4 * groups, 1]);
        else if (rest > 1) plan.push([rest === 2 ? multi2 : multi4, many.rows, 4 * groups, 1]);
      }
      const max = gpu.limits.maxComputeWorkgroupsPerDimension;
      const unused = unusedBinding(gpu);
      for (const [cached, rows, v0, wgy] of plan) {
        if (wgy > max) throw new ShapeError(name, 'batch', `at most ${many ? max * 4 : max}`, String(batch));
        for (const part of w.parts) {
          const partRows = gated ? part.rows / 2 : part.rows;
          const wgx = Math.ceil(partRows / rows);
          if (wgx > max) throw new ShapeError(name, 'weight rows per part', `at most ${max * rows}`, String(part.rows));
          const params = new Params(12)
            .u32(stride).u32(w.k).u32(w.rowBytes).u32(column + part.row0).u32(partRows).u32(batch).u32(v0).u32(gated ? outRows : 0)
            .f32(a.eps ?? 0).u32(0).u32(0).u32(0);
          const buffers = [part.buffer, a.x, a.y, bias ? a.bias! : unused, norm ? a.normWeight! : unused];
          dispatch(gpu, pass, cached, `${name} ${w.label}`, params, buffers, [wgx, wgy]);
        }
      }
    },
  };
}

/** The kernels' MAX_ROWS: rowsPerInvocation's cap. */
const MAX_ROWS = 16;

/** chunk_dot4 of each format for the multi-vector kernel (joined after lib/weights/multi.wgsl). */
const MULTI_DOT: Record<WeightDtype, string> = {
  f32: vec4Multi,
  f16: vec4Multi,
  bf16: vec4Multi,
  q8_0: q8_0Multi,
  q4_0: q4_0Multi,
  q4_K: q4_KMulti,
  q6_K: q6_KMulti,
};

/** Checks a launch shape and resolves its defaults (GemvTuning): variant, override constants, rows per workgroup. */
function launch(gpu: Gpu, kernel: string, t: GemvTuning) {
  const software = isSoftwareAdapter(gpu.adapterInfo);
  // SwiftShader has subgroups, but the plain variant measured faster there (see GemvTuning).
  const subgroups = t.subgroups ?? (gpu.features.subgroups && !software);
  if (subgroups && !gpu.features.subgroups) {
    throw new UnsupportedError(`${kernel} subgroup variant`, 'this device has no subgroups feature; omit `subgroups` to use the plain variant.');
  }
  if (!subgroups && t.rowsPerWorkgroup !== undefined) {
    throw new TypeError(`${kernel}: rowsPerWorkgroup tunes the subgroup variant; the plain one covers workgroupSize × rowsPerInvocation rows.`);
  }
  const wg = t.workgroupSize ?? (software && !subgroups ? 4 : 64);
  const rowsPerInvocation = t.rowsPerInvocation ?? (software ? 16 : subgroups ? 4 : 2);
  if (!Number.isInteger(rowsPerInvocation) || rowsPerInvocation < 1 || rowsPerInvocation > MAX_ROWS) {
    throw new ShapeError(kernel, 'rowsPerInvocation', `an integer in 1..${MAX_ROWS}`, String(rowsPerInvocation));
  }
  // Rows one workgroup covers.
  const rows = subgroups ? t.rowsPerWorkgroup ?? (software ? 64 : 32) : wg * rowsPerInvocation;
  const constants: Record<string, number> = { WG_SIZE: wg };
  if (subgroups) Object.assign(constants, { ROWS: rows, ROWS_PER_SG: rowsPerInvocation });
  else constants.ROWS = rowsPerInvocation;
  return { subgroups, rows, constants };
}
