// The plain trie walk: the tokens whose bytes a grammar accepts from a state, found by stepping the grammar down the
// vocabulary's byte trie and skipping the subtree under every refused byte. The reference the other mask strategies
// are tested against, the fallback where none applies (cheap where few bytes are allowed), and how they finish what
// their tables do not decide (an exit's sub-trie, the tokens past a chain, a lead's subtree).

import type { Grammar, GrammarState } from '../grammar.ts';
import type { ByteTrie } from './vocabulary.ts';

/** Sets in `mask` every token of `trie` whose bytes the grammar accepts from `start` (root tokens: always). */
export function walkTrie(grammar: Grammar, trie: ByteTrie, start: GrammarState, mask: Uint32Array): void {
  const { tokStart, tokIds } = trie;
  for (let k = tokStart[0], end = tokStart[1]; k < end; k++) {
    const id = tokIds[k];
    mask[id >>> 5] |= 1 << (id & 31);
  }
  walkBelow(grammar, trie, 0, start, mask);
}

let scratch: GrammarState[] = [];

/** Sets the tokens in the subtree below `node` (not at it) that the grammar accepts, `state` being the state at it. */
export function walkBelow(grammar: Grammar, trie: ByteTrie, node: number, state: GrammarState, mask: Uint32Array): void {
  const { byte, depth, next, tokStart, tokIds } = trie;
  if (scratch.length <= trie.maxDepth) scratch = new Array(trie.maxDepth + 1);
  const states = scratch;
  const base = depth[node];
  states[base] = state;
  const end = next[node];
  let i = node + 1;
  while (i < end) {
    const d = depth[i];
    const t = grammar.step(states[d - 1], byte[i]);
    if (t === null) {
      i = next[i];
      continue;
    }
    states[d] = t;
    for (let k = tokStart[i], e = tokStart[i + 1]; k < e; k++) {
      const id = tokIds[k];
      mask[id >>> 5] |= 1 << (id & 31);
    }
    i++;
  }
  states.fill(undefined as unknown as GrammarState, base, Math.min(states.length, trie.maxDepth + 1)); // drop references
}
