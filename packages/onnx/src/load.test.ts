// When a checkpoint's graph keeps its q4_0 / q8_0 matrices (MatMulNBits) instead of f32: only when the f32 graph would
// not fit, since ORT's wasm runs f32 faster. Decided from the tensors' shapes and dtypes alone (nothing is read).
import { describe, expect, test } from 'vitest';
import { bytesSource, type ModelFiles, type TensorInfo } from '@intab/model';
import { F32_GRAPH_LIMIT, keepQuantized } from './load.ts';

/** A model whose tensors are `n` matrices of `rows` × 2048 in `dtype` (their bytes are never read). */
function model(dtype: TensorInfo['dtype'], n: number, rows: number): ModelFiles {
  const source = bytesSource('fake.gguf', new Uint8Array(0));
  const tensors = new Map<string, TensorInfo>();
  for (let i = 0; i < n; i++) tensors.set(`blk.${i}.ffn_up.weight`, { name: `blk.${i}.ffn_up.weight`, dtype, shape: [rows, 2048], source, offset: 0, byteLength: 0 });
  return { config: {} as ModelFiles['config'], tensors };
}

describe('keepQuantized', () => {
  const rows = Math.ceil(F32_GRAPH_LIMIT / (4 * 2048 * 8)) + 1; // 8 matrices just past the limit in f32
  test('a quantized checkpoint whose f32 graph passes the limit keeps its blocks', () => {
    expect(keepQuantized(model('q4_0', 8, rows))).toBe(true);
    expect(keepQuantized(model('q8_0', 8, rows))).toBe(true);
  });
  test('under the limit, or with nothing to keep quantized, the graph is f32', () => {
    expect(keepQuantized(model('q4_0', 8, rows - 2))).toBe(false);
    expect(keepQuantized(model('f16', 8, rows))).toBe(false);
    expect(keepQuantized(model('q4_0', 1, 64))).toBe(false);
  });
});
