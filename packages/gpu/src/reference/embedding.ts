// CPU twin of shaders/matmul/embedding.wgsl: the token embedding gather, using the block codecs so
// the GPU's gathered rows can be checked bit for bit.

import { rowBytes, type WeightDtype } from '../formats/blocks.ts';
import { dequantizeRow } from '../formats/codecs.ts';

/**
 * out[t, :] = dequant(W[ids[t], :]) for an (V, C) weight in raw ggml bytes; ids ≥ V give zeros.
 */
export function embedding(
  dtype: WeightDtype,
  wBytes: Uint8Array,
  v: number,
  c: number,
  ids: Uint32Array,
): Float32Array {
  const rb = rowBytes(dtype, c);
  const out = new Float32Array(ids.length * c);
  for (let t = 0; t < ids.length; t++) {
    const id = ids[t];
    if (id >= v) continue; // out of range: zeros
    const row = out.subarray(t * c, (t + 1) * c);
    dequantizeRow(dtype, wBytes, id * rb, c, row);
  }
  return out;
}
