// A small typed WebAssembly module builder: intab writes its CPU kernels (the wasm SIMD128 twins of the WGSL GEMVs)
// as binary modules from TypeScript, because the repository carries no C toolchain (no clang/emcc/wabt) and the
// kernels are a few hundred instructions each. It emits the binary format directly (wasm core 1.0 + the fixed-width
// SIMD proposal, opcode prefix 0xFD, + two relaxed-SIMD dot opcodes whose use the host feature-detects): one type per
// function signature, an imported linear memory (the host owns the weights' memory and several kernel modules share
// it), functions with typed locals, and function exports.
//
// Code is written through `Code`, an instruction emitter with one method per opcode used (names follow the text
// format: `i32_add` is `i32.add`), so a kernel reads like the .wat it would be and a typo is a type error.

/** Value types (binary encoding). */
export const I32 = 0x7f;
export const I64 = 0x7e;
export const F32 = 0x7d;
export const F64 = 0x7c;
export const V128 = 0x7b;
export type ValType = typeof I32 | typeof I64 | typeof F32 | typeof F64 | typeof V128;

/** Unsigned LEB128 (u32 and sizes). */
export function uleb(n: number, out: number[] = []): number[] {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new RangeError(`uleb128 takes a u32, got ${n}`);
  do {
    let byte = n & 0x7f;
    n = Math.floor(n / 128);
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

/** Signed LEB128 (i32.const immediates). */
export function sleb(n: number, out: number[] = []): number[] {
  if (!Number.isInteger(n) || n < -(2 ** 31) || n > 2 ** 32 - 1) throw new RangeError(`sleb128 takes an i32, got ${n}`);
  n |= 0; // u32 constants such as 0xffff0000 are written as the i32 with the same bits
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

function utf8(s: string): number[] {
  const b = new TextEncoder().encode(s);
  return [...uleb(b.length), ...b];
}

/** A block's result type: none (0x40) or one value type. */
type BlockType = 0x40 | ValType;

/** Natural alignment (log2 bytes) per access width; a memarg's align may be smaller (the kernels read unaligned blocks). */
const ALIGN = { 1: 0, 2: 1, 4: 2, 8: 3, 16: 4 } as const;

/**
 * Instruction emitter for one function body. Locals are declared with `local(type)` and are numbered after the
 * params. Memory accesses take a static `offset` (the memarg offset, added to the address operand without a
 * separate i32.add) and an `align` hint that defaults to 1 byte, since GGUF blocks (34 and 18 bytes) are unaligned.
 */
export class Code {
  readonly bytes: number[] = [];
  private readonly locals: ValType[] = [];

  constructor(readonly params: readonly ValType[]) {}

  /** Declares a local; returns its index. */
  local(type: ValType): number {
    this.locals.push(type);
    return this.params.length + this.locals.length - 1;
  }

  /** The body as the code section stores it: size, local declarations (run-length), expression, end. */
  encode(): number[] {
    const groups: [number, ValType][] = [];
    for (const t of this.locals) {
      const last = groups[groups.length - 1];
      if (last && last[1] === t) last[0]++;
      else groups.push([1, t]);
    }
    const body = [...uleb(groups.length)];
    for (const [n, t] of groups) body.push(...uleb(n), t);
    append(body, this.bytes);
    body.push(0x0b);
    return [...uleb(body.length), ...body];
  }

  private op(...b: number[]): this {
    this.bytes.push(...b);
    return this;
  }
  private mem(opcode: number[], width: keyof typeof ALIGN, offset: number, align?: number): this {
    const a = align ?? 0;
    if (a > ALIGN[width]) throw new RangeError(`align 2^${a} exceeds the natural alignment of a ${width}-byte access`);
    return this.op(...opcode, ...uleb(a), ...uleb(offset));
  }
  private simd(opcode: number, ...imm: number[]): this {
    return this.op(0xfd, ...uleb(opcode), ...imm);
  }

  // ---- control ----
  block(bt: BlockType = 0x40): this { return this.op(0x02, bt); }
  loop(bt: BlockType = 0x40): this { return this.op(0x03, bt); }
  if_(bt: BlockType = 0x40): this { return this.op(0x04, bt); }
  else_(): this { return this.op(0x05); }
  end(): this { return this.op(0x0b); }
  br(depth: number): this { return this.op(0x0c, ...uleb(depth)); }
  br_if(depth: number): this { return this.op(0x0d, ...uleb(depth)); }
  return_(): this { return this.op(0x0f); }
  /** Calls the module's function `index` (WasmModule.index), its arguments on the stack. */
  call(index: number): this { return this.op(0x10, ...uleb(index)); }
  select(): this { return this.op(0x1b); }
  drop(): this { return this.op(0x1a); }

  // ---- locals ----
  get(i: number): this { return this.op(0x20, ...uleb(i)); }
  set(i: number): this { return this.op(0x21, ...uleb(i)); }
  tee(i: number): this { return this.op(0x22, ...uleb(i)); }

  // ---- memory ----
  i32_load(offset = 0, align?: number): this { return this.mem([0x28], 4, offset, align); }
  f32_load(offset = 0, align?: number): this { return this.mem([0x2a], 4, offset, align); }
  i32_load16_u(offset = 0, align?: number): this { return this.mem([0x2f], 2, offset, align); }
  i32_store(offset = 0, align?: number): this { return this.mem([0x36], 4, offset, align); }
  f32_store(offset = 0, align?: number): this { return this.mem([0x38], 4, offset, align); }
  v128_load(offset = 0, align?: number): this { return this.mem([0xfd, 0x00], 16, offset, align); }
  v128_store(offset = 0, align?: number): this { return this.mem([0xfd, 0x0b], 16, offset, align); }
  /** v128.load32_zero: one i32/f32 from memory into lane 0, zeros in the others. */
  v128_load32_zero(offset = 0, align?: number): this { return this.mem([0xfd, 0x5c], 4, offset, align); }
  /** v128.load32_splat: one f32/i32 from memory into all four lanes (one broadcast load). */
  v128_load32_splat(offset = 0, align?: number): this { return this.mem([0xfd, 0x09], 4, offset, align); }

  // ---- constants ----
  i32_const(v: number): this { return this.op(0x41, ...sleb(v)); }
  f32_const(v: number): this {
    const b = new Uint8Array(new Float32Array([v]).buffer);
    return this.op(0x43, ...b);
  }
  /** v128.const from 16 bytes. */
  v128_const(bytes: ArrayLike<number>): this {
    if (bytes.length !== 16) throw new RangeError('v128.const takes 16 bytes');
    return this.simd(0x0c, ...Array.from(bytes, (b) => b & 0xff));
  }

  // ---- i32 ----
  i32_eqz(): this { return this.op(0x45); }
  i32_eq(): this { return this.op(0x46); }
  i32_ne(): this { return this.op(0x47); }
  i32_lt_u(): this { return this.op(0x49); }
  i32_gt_u(): this { return this.op(0x4b); }
  i32_le_u(): this { return this.op(0x4d); }
  i32_ge_u(): this { return this.op(0x4f); }
  i32_add(): this { return this.op(0x6a); }
  i32_sub(): this { return this.op(0x6b); }
  i32_mul(): this { return this.op(0x6c); }
  i32_div_u(): this { return this.op(0x6e); }
  i32_and(): this { return this.op(0x71); }
  i32_or(): this { return this.op(0x72); }
  i32_xor(): this { return this.op(0x73); }
  i32_shl(): this { return this.op(0x74); }
  i32_shr_u(): this { return this.op(0x76); }

  // ---- f32 ----
  f32_lt(): this { return this.op(0x5d); }
  f32_gt(): this { return this.op(0x5e); }
  f32_ne(): this { return this.op(0x5c); }
  f32_add(): this { return this.op(0x92); }
  f32_sub(): this { return this.op(0x93); }
  f32_mul(): this { return this.op(0x94); }
  f32_div(): this { return this.op(0x95); }
  f32_max(): this { return this.op(0x97); }
  f64_add(): this { return this.op(0xa0); }
  f64_div(): this { return this.op(0xa3); }
  f64_sqrt(): this { return this.op(0x9f); }
  f64_convert_i32_u(): this { return this.op(0xb8); }
  f64_const(v: number): this {
    return this.op(0x44, ...new Uint8Array(new Float64Array([v]).buffer));
  }
  f32_copysign(): this { return this.op(0x98); }
  i32_reinterpret_f32(): this { return this.op(0xbc); }
  f32_reinterpret_i32(): this { return this.op(0xbe); }

  // ---- v128 (SIMD128, prefix 0xFD) ----
  /** i8x16.shuffle: lane i of the result is byte `lanes[i]` of a ++ b (0–31). */
  i8x16_shuffle(lanes: readonly number[]): this {
    if (lanes.length !== 16 || lanes.some((l) => !(l >= 0 && l < 32))) throw new RangeError('i8x16.shuffle takes 16 lane indices in 0..31');
    return this.simd(0x0d, ...lanes);
  }
  i8x16_splat(): this { return this.simd(0x0f); }
  i16x8_splat(): this { return this.simd(0x10); }
  i32x4_splat(): this { return this.simd(0x11); }
  f32x4_splat(): this { return this.simd(0x13); }
  i32x4_extract_lane(lane: number): this { return this.simd(0x1b, lane); }
  f32x4_extract_lane(lane: number): this { return this.simd(0x1f, lane); }
  /** v128.store32_lane: stores i32/f32 lane `lane` at the address + offset. */
  v128_store32_lane(lane: number, offset = 0, align = 0): this { return this.op(0xfd, ...uleb(0x5a), ...uleb(align), ...uleb(offset), lane); }
  i8x16_gt_s(): this { return this.simd(0x27); }
  f32x4_ge(): this { return this.simd(0x46); }
  v128_and(): this { return this.simd(0x4e); }
  v128_or(): this { return this.simd(0x50); }
  v128_xor(): this { return this.simd(0x51); }
  i8x16_abs(): this { return this.simd(0x60); }
  i8x16_narrow_i16x8_s(): this { return this.simd(0x65); }
  i8x16_shr_u(): this { return this.simd(0x6d); }
  i8x16_sub(): this { return this.simd(0x71); }
  i8x16_max_s(): this { return this.simd(0x78); }
  f32x4_trunc(): this { return this.simd(0x69); }
  i16x8_narrow_i32x4_s(): this { return this.simd(0x85); }
  i16x8_extend_low_i8x16_s(): this { return this.simd(0x87); }
  i16x8_extend_high_i8x16_s(): this { return this.simd(0x88); }
  i16x8_shr_u(): this { return this.simd(0x8d); }
  i32x4_shl(): this { return this.simd(0xab); }
  i32x4_add(): this { return this.simd(0xae); }
  i32x4_sub(): this { return this.simd(0xb1); }
  i32x4_dot_i16x8_s(): this { return this.simd(0xba); }
  f32x4_abs(): this { return this.simd(0xe0); }
  f32x4_add(): this { return this.simd(0xe4); }
  f32x4_sub(): this { return this.simd(0xe5); }
  f32x4_mul(): this { return this.simd(0xe6); }
  f32x4_div(): this { return this.simd(0xe7); }
  f32x4_min(): this { return this.simd(0xe8); }
  /** f32x4.pmin: b < a ? b : a per lane (one minps; f32x4.min's NaN and −0 rules cost x64 several more). */
  f32x4_pmin(): this { return this.simd(0xea); }
  f32x4_max(): this { return this.simd(0xe9); }
  /** f32x4.nearest: round to the nearest integer, ties to even (roundps). */
  f32x4_nearest(): this { return this.simd(0x6a); }
  /** f32x4.pmax: b > a ? b : a per lane (one maxps; no NaN/-0 canonicalization, so cheaper than f32x4.max). */
  f32x4_pmax(): this { return this.simd(0xeb); }
  i32x4_trunc_sat_f32x4_s(): this { return this.simd(0xf8); }
  f64x2_splat(): this { return this.simd(0x14); }
  f64x2_extract_lane(lane: number): this { return this.simd(0x21, lane); }
  f64x2_add(): this { return this.simd(0xf0); }
  f64x2_mul(): this { return this.simd(0xf2); }
  /** f64x2.promote_low_f32x4: lanes 0 and 1 of an f32x4, exactly, as f64. */
  f64x2_promote_low_f32x4(): this { return this.simd(0x5f); }
  /** f32x4.demote_f64x2_zero: both f64 lanes rounded to f32 (to nearest, ties even) into lanes 0 and 1, zeros above. */
  f32x4_demote_f64x2_zero(): this { return this.simd(0x5e); }
  f32x4_convert_i32x4_s(): this { return this.simd(0xfa); }

  // ---- relaxed SIMD (prefix 0xFD, opcodes from 0x100; feature-detected by the host) ----
  /**
   * i32x4.relaxed_dot_i8x16_i7x16_add_s(a, b, c): per i32 lane, c + Σ of 4 products a_i·b_i with a signed i8 and b
   * in 0..127 (outside that range the result is implementation-defined). x64 V8: pmaddubsw + pmaddwd + paddd, or one
   * vpdpbusd where AVX-VNNI is available; arm64: sdot.
   */
  i32x4_relaxed_dot_i8x16_i7x16_add_s(): this { return this.simd(0x113); }
  /** i16x8.relaxed_dot_i8x16_i7x16_s(a, b): per i16 lane, the sum of 2 products a_i·b_i, b in 0..127 (x64: pmaddubsw). */
  i16x8_relaxed_dot_i8x16_i7x16_s(): this { return this.simd(0x112); }
  /** i32x4.extadd_pairwise_i16x8_s: per i32 lane, the sum of two adjacent i16 lanes (x64: pmaddwd with ones). */
  i32x4_extadd_pairwise_i16x8_s(): this { return this.simd(0x7e); }
  i16x8_add(): this { return this.simd(0x8e); }
}

interface FuncDef {
  readonly name: string;
  readonly type: number;
  readonly code: Code;
}

/** A wasm32 memory's most 64 KiB pages (4 GiB). */
export const MAX_PAGES = 65536;

/**
 * A module: an imported memory ("env"."memory") and exported functions.
 * @example
 * const m = new WasmModule({ memoryPages: 1 });
 * const f = m.func('add', [I32, I32], [I32]);
 * f.get(0).get(1).i32_add();
 * const { add } = (await WebAssembly.instantiate(m.encode(), { env: { memory } })).instance.exports;
 */
export class WasmModule {
  private readonly types: string[] = [];
  private readonly funcs: FuncDef[] = [];

  /**
   * `memoryPages`: the imported memory's minimum size in 64 KiB pages; `shared`: the memory is a shared one (wasm
   * threads), whose import declares the largest maximum (MAX_PAGES) so any shared memory matches it.
   */
  constructor(private readonly options: { memoryPages: number; shared?: boolean }) {}

  /** Adds an exported function; returns its body emitter (params are locals 0..n-1). */
  func(name: string, params: readonly ValType[], results: readonly ValType[]): Code {
    if (this.funcs.some((f) => f.name === name)) throw new Error(`function ${name} is defined twice`);
    const sig = [0x60, ...uleb(params.length), ...params, ...uleb(results.length), ...results];
    const key = sig.join(',');
    let type = this.types.indexOf(key);
    if (type < 0) type = this.types.push(key) - 1;
    const code = new Code(params);
    this.funcs.push({ name, type, code });
    return code;
  }

  /** Function `name`'s index, for Code.call (the module imports no function, so its own count from 0). */
  index(name: string): number {
    const i = this.funcs.findIndex((f) => f.name === name);
    if (i < 0) throw new Error(`no function ${name}`);
    return i;
  }

  /** The module's binary. */
  encode(): Uint8Array<ArrayBuffer> {
    // Appended in loops, never spread into push(): a module of many kernels has bodies of hundreds of kilobytes, past
    // the argument limit of a Worker's smaller stack.
    const out = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
    const section = (id: number, items: number[][]) => {
      const payload = uleb(items.length);
      for (const item of items) append(payload, item);
      out.push(id);
      append(out, uleb(payload.length));
      append(out, payload);
    };
    section(1, this.types.map((t) => t.split(',').map(Number)));
    const limits = this.options.shared ? [0x03, ...uleb(this.options.memoryPages), ...uleb(MAX_PAGES)] : [0x00, ...uleb(this.options.memoryPages)];
    section(2, [[...utf8('env'), ...utf8('memory'), 0x02, ...limits]]);
    section(3, this.funcs.map((f) => uleb(f.type)));
    section(7, this.funcs.map((f, i) => [...utf8(f.name), 0x00, ...uleb(i)]));
    section(10, this.funcs.map((f) => f.code.encode()));
    return Uint8Array.from(out);
  }
}

/** Appends `items` to `out` one by one (push(...items) overflows the stack for long arrays). */
function append(out: number[], items: readonly number[]): void {
  for (let i = 0; i < items.length; i++) out.push(items[i]);
}
