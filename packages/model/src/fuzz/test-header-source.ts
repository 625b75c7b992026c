// A model file whose header is given and whose data section is only claimed (test tooling for the format fuzzers):
// reads return the header's bytes and zeros past it, so a mutated header can describe megabytes of tensors without
// any case allocating them.

import { ModelFormatError } from '../errors.ts';
import type { ByteSource } from '../types.ts';

/** `header` followed by `dataBytes` zero bytes, as a ByteSource. */
export function headerSource(name: string, header: Uint8Array, dataBytes: number): ByteSource {
  const size = header.length + dataBytes;
  return {
    name,
    size,
    async read(offset, length) {
      if (offset < 0 || length < 0 || offset + length > size) throw new ModelFormatError(name, `bytes ${offset}..${offset + length}`, `past the end of the ${size}-byte file`);
      const out = new Uint8Array(length);
      if (offset < header.length) out.set(header.subarray(offset, Math.min(header.length, offset + length)));
      return out;
    },
  };
}
