// What the fuzzers do with a grammar that compiled (test tooling): step it the way generation does — a seeded walk
// over bytes it allows, so that lazily built parts (strings, patterns, numbers) are built — and now and then compute
// the allowed-token mask over a small vocabulary, the work the engine does per token (bounded by the maskWork budget).

import type { Grammar, GrammarState } from '../grammar.ts';
import { computeMask } from '../tokens/compute-mask.ts';
import { forcedBytes } from '../tokens/matcher.ts';
import { TokenVocabulary } from '../tokens/vocabulary.ts';
import type { Random } from '@intab/testing/fuzz';

const enc = new TextEncoder();

/** Bytes a walk tries first: JSON punctuation, digits, letters, escapes, UTF-8 lead and continuation bytes. */
const CANDIDATES = [...enc.encode('{}[]",:0123456789-+.eEtrufalsn abcxyzAZ_\\/\n'), 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80, 0x00, 0x7f, 0xff];

let vocab: TokenVocabulary | undefined;

/** About 1,100 tokens: every byte, JSON fragments, words, whitespace runs and multi-byte characters. */
function smallVocabulary(): TokenVocabulary {
  if (vocab) return vocab;
  const texts = new Set<string>();
  for (const t of ['{"', '":', '","', '"}', '},{', '[{', '}]', '":"', '":[', '":{', 'true', 'false', 'null', '\\n', '\\"', '\\u00', '  ', '    ', '\n  ', '0.', '-1', '1e', '00', '123', '2024-', 'T12:', 'http://', '.com', '@', 'é', '€', '😀', '中文']) texts.add(t);
  const words = 'the of and to a in is it you that he was for on are with as I his they be at one have this from or had by hot word but what some we can out other were all there when up use your how said an each she which do their time if will way about many then them write would like so these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first who may down side been now find any new work part take get place made live where after back little only round man year came show every good me give our under name very through just form sentence great think say help low line differ turn cause much mean before move right boy old too same tell does set three want air well also play small end put home read hand port large spell add even land here must big high such follow act why ask men change went light kind off need house picture try us again animal point mother world near build self earth father'.split(' ');
  for (const t of words) {
    texts.add(t);
    texts.add(' ' + t);
    texts.add(t + '"');
    texts.add('"' + t);
  }
  const tokens: Uint8Array[] = [];
  for (let b = 0; b < 256; b++) tokens.push(Uint8Array.of(b));
  for (const t of texts) tokens.push(enc.encode(t));
  vocab = TokenVocabulary.from(tokens, { eos: [0] });
  return vocab;
}

/**
 * Walks up to `bytes` allowed bytes (a few candidates tried first, else the first allowed one) and, with probability
 * `maskEvery`, computes the token mask and the forced bytes there: 'compiled', or 'compiled+mask'.
 */
export function exercise(g: Grammar, r: Random, bytes = 48, maskEvery = 0.15): string {
  let s: GrammarState = g.initial;
  let n = 0;
  for (; n < bytes && !g.finished(s); n++) {
    let next: GrammarState | null = null;
    for (let k = 0; k < 6 && next === null; k++) next = g.step(s, r.pick(CANDIDATES));
    for (let b = 0; b < 256 && next === null; b++) next = g.step(s, (b + n * 37) & 255);
    if (next === null) break;
    s = next;
  }
  g.accepting(s);
  g.key(s);
  g.counted?.(s);
  if (r.chance(maskEvery)) {
    const v = smallVocabulary();
    computeMask(g, v, s);
    forcedBytes(g, s, 256);
    return 'compiled+mask';
  }
  return 'compiled';
}
