// What a clean result of the format fuzzers must satisfy (test tooling): a table of tensors that the weight upload
// can trust — a dtype name, whole non-negative dims, and bytes inside the file that no other tensor shares. A result
// that breaks this is a crash even though nothing threw.

import type { TensorInfo } from '../types.ts';

/**
 * Throws a plain Error (counted as a crash) when a parsed tensor table could not be read safely. One TensorInfo under
 * two names (tied embeddings: token_embd and output) is one tensor.
 */
export function checkTensorTable(tensors: Iterable<TensorInfo>, fileSize: (t: TensorInfo) => number): void {
  const spans = new Map<unknown, { name: string; offset: number; end: number }[]>();
  for (const t of new Set(tensors)) {
    if (typeof t.dtype !== 'string' || t.dtype.length === 0) throw new Error(`tensor ${t.name}: dtype ${String(t.dtype)} is not a name`);
    if (!t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new Error(`tensor ${t.name}: shape [${t.shape.join(', ')}]`);
    const ok = Number.isSafeInteger(t.offset) && t.offset >= 0 && Number.isSafeInteger(t.byteLength) && t.byteLength >= 0 && t.offset + t.byteLength <= fileSize(t);
    if (!ok) throw new Error(`tensor ${t.name}: bytes ${t.offset}+${t.byteLength} outside its ${fileSize(t)}-byte file`);
    if (t.byteLength === 0) continue; // an empty tensor shares no bytes
    const list = spans.get(t.source) ?? [];
    list.push({ name: t.name, offset: t.offset, end: t.offset + t.byteLength });
    spans.set(t.source, list);
  }
  for (const list of spans.values()) {
    list.sort((a, b) => a.offset - b.offset);
    for (let i = 1; i < list.length; i++) {
      // row ranges of one fused tensor (Phi-3 qkv) are adjacent, never overlapping
      if (list[i]!.offset < list[i - 1]!.end) throw new Error(`tensors ${list[i - 1]!.name} and ${list[i]!.name} overlap`);
    }
  }
}
