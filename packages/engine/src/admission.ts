// How the scheduler admits a waiting request when the prefix cache is on: the request maps its prompt's longest
// cached prefix (pages other requests or preloads left behind) and needs pages only for the rest. Without the cache
// (or for a request that opts out with `cache: false`) it is the scheduler's plain admission: every request starts
// empty.

import type { StepRunner } from '@intab/model';
import type { PrefixCache, PrefixMatch } from './prefix-cache.ts';
import { plainAdmission, type Admission } from './scheduler.ts';
import type { Sequence } from './sequence.ts';

/**
 * The admission for `runner`: a request maps its prompt's longest cached prefix (all of it for a preload; all but the
 * last token otherwise, whose logits are sampled) and needs pages only for the rest.
 * @example
 * const scheduler = new Scheduler(runner, limits, cacheAdmission(runner, new PrefixCache(runner)));
 */
export function cacheAdmission(runner: StepRunner, cache: PrefixCache | undefined): Admission {
  const plain = plainAdmission(runner);
  if (!cache) return plain;
  /** What each waiting request matched in the cache when the scheduler last asked (admit() maps it). */
  const matches = new WeakMap<Sequence, PrefixMatch>();
  const matchOf = (seq: Sequence) => cache.lookup(seq.prompt, seq.prefillOnly ? seq.prompt.length : seq.prompt.length - 1);
  return {
    cost: (seq) => {
      if (!seq.options.cache) return plain.cost(seq);
      let match = matchOf(seq);
      let cost = cache.cost(match, seq.reserveLength);
      // A partly matched page stays mapped until it is copied: a request that reserves every page it can have
      // (maxTokens clamped to the KV-cache) would wait for that one page forever. It maps whole pages only then,
      // and prefills the few tokens of the partial page again.
      if (cost.need > cost.available && match.tokens % cache.pageSize !== 0) {
        const whole = Math.floor(match.tokens / cache.pageSize);
        match = { tokens: whole * cache.pageSize, nodes: match.nodes.slice(0, whole) };
        cost = cache.cost(match, seq.reserveLength);
      }
      matches.set(seq, match);
      return cost;
    },
    admit: (seq) => {
      if (!seq.options.cache) return plain.admit(seq);
      const match = matches.get(seq) ?? matchOf(seq);
      matches.delete(seq);
      cache.attach(seq.id, match, seq.prompt.length);
      seq.admitted(match.tokens);
    },
  };
}
