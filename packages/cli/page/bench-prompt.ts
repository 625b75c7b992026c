// The prompt ids of `intab bench compare`, the same for every system of a run (the page's systems and llama.cpp on
// this CPU): seeded random ids, made the encoding of a text where the model carries a tokenizer. Random ids are decoded
// to text and encoded again, cut to the length asked, and kept only if they survive that round trip themselves, so a
// peer that takes a prompt as text only (wllama 3.x, whose llama-server request handling tokenizes the text itself)
// gets exactly the ids the others get. Without a tokenizer (a bare checkpoint) the random ids are the prompt.

import { mulberry32 } from '@intab/gpu';
import type { Tokenizer } from '@intab/model';

/** Tries of the round trip before falling back to plain random ids (each try draws new ids). */
const TRIES = 64;

/**
 * `length` prompt ids from `seed`: BOS first where the model has one, then ids that are a text's encoding (with a
 * tokenizer), else random ids in [3, vocab).
 * @example
 * const ids = benchPromptIds({ vocab: 151936, bosId: null }, tokenizer, 32, 0);
 * tokenizer.encode(tokenizer.decode(ids), { addSpecialTokens: false }); // the same ids
 */
export function benchPromptIds(config: { vocab: number; bosId: number | null }, tokenizer: Tokenizer | undefined, length: number, seed: number): number[] {
  const rng = mulberry32(seed);
  const bos = config.bosId !== null ? [config.bosId] : [];
  const n = length - bos.length;
  const random = (count: number, vocab: number, skip?: (id: number) => boolean) => {
    const ids: number[] = [];
    while (ids.length < count) {
      const id = 3 + Math.floor(rng() * (vocab - 3));
      if (!skip?.(id)) ids.push(id);
    }
    return ids;
  };
  if (tokenizer && n > 0) {
    const vocab = Math.min(config.vocab, tokenizer.vocabSize);
    const plain = { addSpecialTokens: false };
    for (let t = 0; t < TRIES; t++) {
      // Twice the length: merges shorten the re-encoded text.
      const text = tokenizer.decode(random(2 * n, vocab, (id) => tokenizer.isSpecial(id)));
      const ids = tokenizer.encode(text, plain).slice(0, n);
      if (ids.length < n || ids.some((id) => tokenizer.isSpecial(id))) continue;
      const again = tokenizer.encode(tokenizer.decode(ids), plain);
      if (again.length === n && again.every((id, i) => id === ids[i])) return [...bos, ...ids];
    }
  }
  return [...bos, ...random(Math.max(0, n), config.vocab)].slice(0, length);
}
