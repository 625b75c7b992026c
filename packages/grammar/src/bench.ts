// What `intab bench grammar` measures with this package's own code, beyond its cold/warm mask figures: which path
// made each token mask (a cache hit, or computed by one of compute-mask.ts's paths), what a repeat of the same
// documents costs (every mask a cache hit), the vocabulary's trie and walk cache, and the cost of one grammar step.
// Benchmarks, not tests: the figures are printed by the CLI (`@intab/grammar/bench`), never asserted.

import { compileJsonSchema } from './schema-compile.ts';
import type { Grammar, GrammarState } from './grammar.ts';
import { MaskCache } from './tokens/mask-cache.ts';
import { TokenMatcher } from './tokens/matcher.ts';
import type { TokenVocabulary } from './tokens/vocabulary.ts';

// ---- mask profile ----

export interface MaskProfileOptions {
  /** A seeded RNG from a seed (the CLI's `rng`): documents are sampled with it, so one seed gives the same documents. */
  random: (seed: number) => () => number;
  seed: number;
  /** Documents per grammar and pass (default 2). */
  documents?: number;
  /** Tokens sampled freely before EOS is taken whenever it is allowed (default 32). */
  minTokens?: number;
  /** Tokens after which a document stops (default 4000). */
  maxTokens?: number;
}

/** Mask times of one set of masks, in microseconds. */
export interface MaskTimes {
  masks: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  max_us: number;
  mean_us: number;
}

/** One pass over every grammar's documents. */
export interface MaskPass extends MaskTimes {
  documents: number;
  tokens: number;
  /** By the path that made the mask: 'cached', or compute-mask.ts's MaskPath ('loop', 'chain', 'walk', ...). */
  by_path: Record<string, MaskTimes>;
}

export interface MaskProfile {
  vocab: number;
  trie_nodes: number;
  trie_build_ms: number;
  grammars: number;
  /** Fresh mask caches (the vocabulary's walk cache persists across grammars, as in the engine). */
  cold: MaskPass;
  /** The same caches, other documents (other seeds): a server that has seen the schemas. */
  warm: MaskPass;
  /** The cold pass's documents again: every mask a cache hit. */
  repeat: MaskPass;
  walk_cache_entries: number;
  walk_cache_mb: number;
}

/** Seeds of the warm pass's documents: far from the cold pass's. */
const WARM_SEED_OFFSET = 7777;

/**
 * Times every mask() of seeded constrained generations, driven as the engine drives a matcher (a token sampled
 * uniformly among the allowed ones, then the tokens the grammar forces), in three passes: cold, warm, repeat.
 * For a cold start pass a vocabulary built for the call (`TokenVocabulary.from(bytes.slice(), ...)`: an empty walk
 * cache) and freshly compiled grammars. Throws when a grammar allows no token before it is done (a broken mask).
 * @example
 * const profile = profileMasks(TokenVocabulary.from(tokenBytes(tok), { eos: tok.stopIds }), grammars, { random: rng, seed: 1 });
 * console.log(JSON.stringify({ bench: 'grammar', kind: 'mask_profile', ...profile }));
 */
export function profileMasks(vocab: TokenVocabulary, grammars: readonly Grammar[], o: MaskProfileOptions): MaskProfile {
  const documents = o.documents ?? 2;
  const caches = grammars.map(() => new MaskCache());
  const pass = (seed: number): MaskPass => {
    const all: number[] = [];
    const byPath: Record<string, number[]> = {};
    let tokens = 0;
    grammars.forEach((g, i) => {
      for (let d = 0; d < documents; d++) {
        const m = new TokenMatcher(g, vocab, { maskCache: caches[i] });
        tokens += generate(m, o.random(seed + i * 31 + d), o.minTokens ?? 32, o.maxTokens ?? 4000, (us, path) => {
          all.push(us);
          (byPath[path] ??= []).push(us);
        });
      }
    });
    const paths = Object.entries(byPath).map(([path, us]) => [path, times(us)] as const);
    return { documents: grammars.length * documents, tokens, ...times(all), by_path: Object.fromEntries(paths) };
  };
  const cold = pass(o.seed);
  const warm = pass(o.seed + WARM_SEED_OFFSET);
  const repeat = pass(o.seed);
  const walks = [...vocab.walkCache.values()] as { bytes?: number }[];
  return {
    vocab: vocab.size,
    trie_nodes: vocab.trie.nodeCount,
    trie_build_ms: Math.round(vocab.buildMs),
    grammars: grammars.length,
    cold,
    warm,
    repeat,
    walk_cache_entries: vocab.walkCache.size,
    walk_cache_mb: Math.round(walks.reduce((n, w) => n + (w.bytes ?? 0), 0) / 1e5) / 10,
  };
}

/** One document: mask (timed), a uniform pick among the allowed tokens (EOS once allowed after minTokens), forced tokens. */
function generate(m: TokenMatcher, r: () => number, minTokens: number, maxTokens: number, timed: (us: number, path: string) => void): number {
  const eos = m.vocab.eos;
  let tokens = 0;
  while (!m.done && tokens < maxTokens) {
    const t0 = performance.now();
    const mask = m.mask();
    timed((performance.now() - t0) * 1000, m.lastPath ?? 'none');
    let pick = tokens >= minTokens ? (eos.find((id) => allowed(mask, id)) ?? -1) : -1;
    if (pick < 0) pick = uniformAllowed(mask, r);
    if (pick < 0 || !m.accept(pick)) throw new Error(`profileMasks: the mask allows no token after ${tokens} tokens, and the grammar is not done`);
    tokens++;
    while (!m.done) {
      const forced = m.forced();
      if (forced.length === 0) break;
      for (const id of forced) {
        if (!m.accept(id)) throw new Error(`profileMasks: forced token ${id} was refused after ${tokens} tokens`);
        tokens++;
      }
    }
  }
  return tokens;
}

const allowed = (mask: Uint32Array, id: number) => (mask[id >>> 5] & (1 << (id & 31))) !== 0;

/** A token id drawn uniformly among the mask's set bits; -1 when none is set. */
function uniformAllowed(mask: Uint32Array, r: () => number): number {
  let count = 0;
  for (const w of mask) count += popcount(w);
  if (count === 0) return -1;
  let k = Math.floor(r() * count);
  for (let i = 0; i < mask.length; i++) {
    const n = popcount(mask[i]);
    if (k >= n) {
      k -= n;
      continue;
    }
    for (let b = 0; b < 32; b++) if (mask[i] & (1 << b) && k-- === 0) return i * 32 + b;
  }
  return -1;
}

function popcount(w: number): number {
  w -= (w >>> 1) & 0x55555555;
  w = (w & 0x33333333) + ((w >>> 2) & 0x33333333);
  return (((w + (w >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

function times(us: readonly number[]): MaskTimes {
  const s = [...us].sort((a, b) => a - b);
  const q = (p: number) => round(s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0);
  return { masks: s.length, p50_us: q(0.5), p90_us: q(0.9), p99_us: q(0.99), max_us: round(s[s.length - 1] ?? 0), mean_us: round(s.reduce((a, b) => a + b, 0) / Math.max(1, s.length)) };
}

const round = (x: number) => Math.round(x * 10) / 10;

// ---- step cost ----

export interface StepCost {
  /** ns per Grammar.step() on a cached transition (inside a JSON string). */
  warm_ns_per_step: number;
  warm_steps: number;
  /** ns per byte feeding fixed documents through a fresh grammar: first visits, states created as they are reached. */
  fresh_ns_per_byte: number;
  fresh_bytes: number;
}

const STEP_TEXT = new TextEncoder().encode('the quick brown fox jumps over the lazy dog, ünïcödé 😀 ');

/**
 * The cost of one grammar step: cached, and on first visits.
 * @example
 * console.log(JSON.stringify({ bench: 'grammar', kind: 'step', ...measureStepCost() }));
 */
export function measureStepCost(o: { warmSteps?: number } = {}): StepCost {
  const warmSteps = o.warmSteps ?? 2_000_000;
  const g = compileJsonSchema({ type: 'object', properties: { text: { type: 'string' }, n: { type: 'integer' } }, required: ['text', 'n'], additionalProperties: false });
  let s = feed(g, g.initial, new TextEncoder().encode('{"text":"'));
  for (const b of STEP_TEXT) s = g.step(s, b) ?? fail('warm text'); // every transition of the loop cached
  const t0 = performance.now();
  for (let i = 0; i < warmSteps; i++) s = g.step(s, STEP_TEXT[i % STEP_TEXT.length]) ?? fail('warm step');
  const warmNs = ((performance.now() - t0) * 1e6) / warmSteps;

  const fresh = compileJsonSchema({ type: 'object', properties: { a: { type: 'array', items: { type: 'number', minimum: 0 } }, b: { type: 'string', format: 'date-time' } } });
  const docs = Array.from({ length: 20 }, (_, i) =>
    new TextEncoder().encode(JSON.stringify({ a: Array.from({ length: 1 + (i % 7) }, (_, k) => k * 37.25 + i), b: `2024-${String(1 + (i % 12)).padStart(2, '0')}-1${i % 10}T0${i % 10}:3${i % 6}:00Z` })),
  );
  const t1 = performance.now();
  let bytes = 0;
  for (const d of docs) {
    if (!fresh.accepting(feed(fresh, fresh.initial, d))) fail('fresh document');
    bytes += d.length;
  }
  const freshNs = ((performance.now() - t1) * 1e6) / bytes;
  return { warm_ns_per_step: round(warmNs), warm_steps: warmSteps, fresh_ns_per_byte: round(freshNs), fresh_bytes: bytes };
}

function feed(g: Grammar, s: GrammarState, bytes: Uint8Array): GrammarState {
  for (const b of bytes) s = g.step(s, b) ?? fail(`byte ${b}`);
  return s;
}

function fail(what: string): never {
  throw new Error(`measureStepCost: the grammar refused its ${what}`);
}
