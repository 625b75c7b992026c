// CPU twin of shaders/matmul/embedding.wgsl: the token embedding gather, using the block codecs so
// the GPU's gathered rows can be checked bit for bit.

import { rowBytes, type WeightDtype } from '../formats/blocks.ts';
import { dequantizeRow } from '../formats/codecs.ts';

/**
 * out[t, :] = dequant(W[ids[t], :]) * scale for an (V, C) weight in raw ggml bytes; ids ≥ V give zeros.
 * The product is rounded to f32 once, as the GPU does (scale 1 leaves the dequantized values untouched).
 */
export function embedding(
  dtype: WeightDtype,
  wBytes: Uint8Array,
  v: number,
  c: number,
  ids: Uint32Array,
  scale = 1,
): Float32Array {
  const rb = rowBytes(dtype, c);
  const s = Math.fround(scale);
  const out = new Float32Array(ids.length * c);
  for (let t = 0; t < ids.length; t++) {
    const id = ids[t];
    if (id >= v) continue; // out of range: zeros
    const row = out.subarray(t * c, (t + 1) * c);
    dequantizeRow(dtype, wBytes, id * rb, c, row);
    if (s !== 1) for (let i = 0; i < c; i++) row[i] = Math.fround(row[i] * s);
  }
  return out;
}
