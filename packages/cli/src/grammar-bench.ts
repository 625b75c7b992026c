// The Node part of `intab bench grammar` (bench-grammar.ts runs it; no browser):
//   coverage  every selected JSONSchemaBench schema compiled in strict mode: compiled / total per subset, beside
//             the published figures of ../shared/schemas/README.md;
//   compile   per tokenizer, compile time of every schema that compiles (a fresh grammar each pass) and the
//             first mask (compile + the mask of the initial state, with a fresh mask cache): the cost before a
//             constrained request's first token;
//   mask      per tokenizer, every mask() call of realistic constrained generations, timed: for each compiled
//             schema a seeded random walk under the masks as the engine drives a matcher (the first token is
//             sampled at the initial state; after each sampled token the forced tokens follow without a mask;
//             sampling is uniform among the allowed tokens; after MIN_TOKENS, EOS whenever it is allowed, else half
//             the time a token made only of '"', '}' and ']' when one is allowed; at MAX_TOKENS the walk stops
//             sampling and a bounded search finishes the document (untimed; a document it cannot finish within
//             its budget is `unfinished`, as max tokens would cut it, and is not checked)). Two documents per schema:
//               cold  a fresh grammar and mask cache (the vocabulary's walk cache, shared by every grammar of the
//                     vocabulary as in the engine, persists across schemas);
//               warm  the same grammar and cache, another seed: a server that has seen the schema.
//             Every finished document must parse (strict UTF-8, JSON.parse) and validate with ajv + ajv-formats
//             (the oracle of @intab/grammar's tests): failures are `invalid_outputs`.
//   mask_profile, step  per tokenizer, @intab/grammar/bench's profileMasks (where each mask came from, a repeat pass,
//             the trie and walk cache; a fresh vocabulary); once, measureStepCost (ns per grammar step).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileJsonSchema, completeDocument, MaskCache, TokenMatcher, TokenVocabulary, type Grammar, type GrammarState } from '@intab/grammar';
import { measureStepCost, profileMasks } from '@intab/grammar/bench';
import { loadTokenizer, tokenBytes } from '@intab/model';
import { coverageRows, parsePublishedCoverage, round, summarize, type CoverageRow } from './grammar-stats.ts';
import { sampleMask } from '@intab/testing/grammars';
import { mulberry32 as rng } from '@intab/testing/random';
import { schemaValidator } from '@intab/testing/schema-validator';
import { realTokenizerFiles, type RealTokenizerName } from '@intab/testing/tokenizer-corpus';

export interface BenchSchema {
  id: string;
  subset: string;
  schema: unknown;
}

export interface NodeBenchOptions {
  /** The folder beside the repository with schemas/ (../shared). */
  shared: string;
  tokenizers: readonly RealTokenizerName[];
  /** Schemas per subset (the first N of each in file order); all when undefined. */
  perSubset?: number;
  seed: number;
  onRecord: (record: Record<string, unknown>) => void;
  /** Progress lines (stderr). */
  onProgress?: (line: string) => void;
}

/**
 * The decode part's schema unless --decode-schema: Auth0's user profile (GitHub medium), 8 required fields of every
 * JSON type (strings, booleans, a number, an array of objects), so a constrained document runs to max tokens.
 */
export const DEFAULT_DECODE_SCHEMA = 'Github_medium/o33964';

/** Tokens sampled freely before the walk heads for the end. */
export const MIN_TOKENS = 32;
/** Tokens after which the walk stops sampling and a search finishes the document. */
export const MAX_TOKENS = 512;

/** The mask figures' targets (issue 6): p50 ≤ 50 µs, p99 ≤ 500 µs on the 151k vocabulary; compile p50 ≤ 10 ms. */
export const TARGETS = { mask_p50_us: 50, mask_p99_us: 500, compile_p50_ms: 10 } as const;

/** The sample's schemas, the first `perSubset` of each subset (all without it), in file order. */
export function loadSample(shared: string, perSubset?: number): BenchSchema[] {
  const lines = readFileSync(join(shared, 'schemas/jsonschemabench/sample_100_per_subset.jsonl'), 'utf8').trim().split('\n');
  const taken = new Map<string, number>();
  const out: BenchSchema[] = [];
  for (const line of lines) {
    const s = JSON.parse(line) as BenchSchema;
    const n = taken.get(s.subset) ?? 0;
    if (perSubset !== undefined && n >= perSubset) continue;
    taken.set(s.subset, n + 1);
    out.push({ id: s.id, subset: s.subset, schema: s.schema });
  }
  return out;
}

/** Strict compile; the error's name when it fails. */
function tryCompile(schema: unknown): { grammar: Grammar; ms: number } | { error: string } {
  const t0 = performance.now();
  try {
    const grammar = compileJsonSchema(schema, { strict: true });
    return { grammar, ms: performance.now() - t0 };
  } catch (e) {
    return { error: (e as Error).name || 'Error' };
  }
}

/** Whether the schema compiles in strict mode (as the decode part's request will). */
export function compiles(schema: unknown): boolean {
  return !('error' in tryCompile(schema));
}

type Validator = NonNullable<ReturnType<typeof schemaValidator>>;

/** ajv validators by schema id (compiled once for every tokenizer); null when ajv cannot compile the schema. */
const validators = new Map<string, Validator | null>();

function validatorOf(s: BenchSchema): Validator | null {
  let v = validators.get(s.id);
  if (v === undefined) validators.set(s.id, (v = schemaValidator(s.schema) ?? null));
  return v;
}

/** Where `bytes` stops being UTF-8 (TextDecoder's fatal mode), as `at <offset>: <hex of up to 4 bytes>`; undefined when it is. */
export function invalidUtf8(bytes: Uint8Array): string | undefined {
  const hex = (from: number) => Array.from(bytes.subarray(from, from + 4), (b) => b.toString(16).padStart(2, '0')).join(' ');
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    const [n, lo, hi] = b < 0x80 ? [0, 0, 0] : b >= 0xc2 && b <= 0xdf ? [1, 0x80, 0xbf] : b === 0xe0 ? [2, 0xa0, 0xbf] : b === 0xed ? [2, 0x80, 0x9f] : b >= 0xe1 && b <= 0xef ? [2, 0x80, 0xbf] : b === 0xf0 ? [3, 0x90, 0xbf] : b >= 0xf1 && b <= 0xf3 ? [3, 0x80, 0xbf] : b === 0xf4 ? [3, 0x80, 0x8f] : [-1, 0, 0];
    if (n < 0) return `at ${i}: ${hex(i)}`;
    for (let k = 1; k <= n; k++) {
      const c = bytes[i + k];
      if (c === undefined || c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xbf)) return `at ${i}: ${hex(i)}`;
    }
    i += n + 1;
  }
  return undefined;
}

/** Whether `bytes` is a document of the schema: strict UTF-8, JSON, valid (null: ajv cannot check this schema). */
export function checkDocument(s: BenchSchema, bytes: Uint8Array | string): { valid: boolean | null; reason?: string } {
  let value: unknown;
  try {
    const text = typeof bytes === 'string' ? bytes : new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch (e) {
    const where = typeof bytes === 'string' ? undefined : invalidUtf8(bytes);
    return { valid: false, reason: where ? `not UTF-8 ${where}` : `does not parse: ${(e as Error).message}` };
  }
  const validate = validatorOf(s);
  if (!validate) return { valid: null };
  const r = validate(value);
  return r.valid ? { valid: true } : { valid: false, reason: JSON.stringify(r.errors).slice(0, 300) };
}

const has = (mask: Uint32Array, id: number) => (mask[id >>> 5] & (1 << (id & 31))) !== 0;

/** Ids whose bytes are only '"', '}' and ']' (what closes what is open). */
export function closingTokens(vocab: TokenVocabulary): Int32Array {
  const closing = new Set([0x22, 0x7d, 0x5d]);
  const ids: number[] = [];
  vocab.tokens.forEach((b, id) => {
    if (b && b.length > 0 && b.every((x) => closing.has(x))) ids.push(id);
  });
  return Int32Array.from(ids);
}

interface WalkResult {
  bytes: Uint8Array;
  tokens: number;
  forced: number;
  /** The walk reached MAX_TOKENS and a search finished the document. */
  searched: boolean;
}

/**
 * One constrained generation, driven as the engine drives a matcher; every mask() is timed into `maskUs`
 * (microseconds), with the first one also returned through `firstMaskUs`.
 */
/**
 * The walks' next token from an allowed-token mask: after MIN_TOKENS, EOS whenever it is allowed, else half the time a
 * closing token; otherwise uniform among the allowed ones (-1 when nothing is). The peer's walk draws the same way.
 */
export function pickWalkToken(mask: Uint32Array, tokens: number, eos: readonly number[], closing: Int32Array, r: () => number): number {
  if (tokens >= MIN_TOKENS) {
    const end = eos.find((id) => has(mask, id));
    if (end !== undefined) return end;
    if (r() < 0.5) {
      const allowed: number[] = [];
      for (const id of closing) if (has(mask, id)) allowed.push(id);
      if (allowed.length > 0) return allowed[Math.floor(r() * allowed.length)];
    }
  }
  return sampleMask(mask, r);
}

export function walk(m: TokenMatcher, closing: Int32Array, r: () => number, maskUs: number[], hits: { cached: number }): WalkResult & { firstMaskUs: number; unfinished: boolean } {
  const vocab = m.vocab;
  const eos = vocab.eos;
  let tokens = 0;
  let forced = 0;
  let firstMaskUs = NaN;
  const take = (id: number, what: string) => {
    if (!m.accept(id)) throw new Error(`${what} token ${id} refused`);
    tokens++;
  };
  while (!m.done && tokens < MAX_TOKENS) {
    const t0 = performance.now();
    const mask = m.mask();
    const us = (performance.now() - t0) * 1000;
    maskUs.push(us);
    if (Number.isNaN(firstMaskUs)) firstMaskUs = us;
    if (m.lastPath === 'cached') hits.cached++;
    const pick = pickWalkToken(mask, tokens, eos, closing, r);
    if (pick < 0) throw new Error(`nothing is allowed after ${tokens} tokens`);
    take(pick, 'sampled');
    // As the engine does after a sampled token: the text the grammar fixes follows at once.
    while (!m.done) {
      const f = m.forced();
      if (f.length === 0) break;
      for (const id of f) take(id, 'forced');
      forced += f.length;
    }
  }
  let searched = false;
  if (!m.done) {
    searched = true;
    if (!m.canEnd) {
      const path = searchEnd(m.grammar, m.state);
      if (path === null) return { bytes: new Uint8Array(0), tokens, forced, searched, firstMaskUs, unfinished: true };
      for (const id of vocab.tokenize(path)) take(id, 'completion');
    }
    const end = eos[0];
    if (!m.done && end !== undefined && m.canEnd) take(end, 'EOS');
  }
  return { bytes: walkedBytes(m.accepted, eos, vocab), tokens, forced, searched, firstMaskUs, unfinished: false };
}

/** The document a walk wrote: the bytes of its accepted tokens in order, the end-of-sequence ids left out. */
export function walkedBytes(accepted: readonly number[], eos: readonly number[], vocab: TokenVocabulary): Uint8Array {
  const eosSet = new Set(eos);
  const parts = accepted.filter((id) => !eosSet.has(id)).map((id) => vocab.tokens[id]!);
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  return bytes;
}

/** Bytes from `start` to an accepting state (completeDocument), bounded: null after `budget` grammar steps. */
export function searchEnd(g: Grammar, start: GrammarState, budget = 50_000, maxBytes = 8192): Uint8Array | null {
  return completeDocument(g, start, { budget, maxBytes });
}

interface DocTally {
  maskUs: number[];
  hits: { cached: number };
  documents: number;
  tokens: number;
  forced: number;
  searched: number;
  unfinished: number;
  invalid: number;
  unvalidated: number;
}

const tally = (): DocTally => ({ maskUs: [], hits: { cached: 0 }, documents: 0, tokens: 0, forced: 0, searched: 0, unfinished: 0, invalid: 0, unvalidated: 0 });

/**
 * Runs coverage, then per tokenizer compile and mask; records go to onRecord as they are ready. Returns the schema
 * the decode part should use (DEFAULT_DECODE_SCHEMA when it is among the selected schemas and compiles, else the
 * compiled, ajv-checkable schema whose document found by searchEnd is the longest, so that constrained decoding
 * runs to max tokens), the coverage rows, the failures (walk errors, invalid documents) and the documents left
 * unfinished (MAX_TOKENS reached and searchEnd out of budget: not checked, as max tokens would cut them).
 */
export function runNodeBench(o: NodeBenchOptions): { decodeSchema: BenchSchema | undefined; coverage: CoverageRow[]; failures: string[]; unfinished: string[] } {
  const progress = o.onProgress ?? (() => {});
  const sample = loadSample(o.shared, o.perSubset);
  const failures: string[] = [];
  const unfinished: string[] = [];

  // ---- coverage ----
  const results: { s: BenchSchema; compiled: boolean; error?: string; minimal?: number }[] = [];
  const t0 = performance.now();
  for (const s of sample) {
    const c = tryCompile(s.schema);
    results.push('error' in c ? { s, compiled: false, error: c.error } : { s, compiled: true, minimal: searchEnd(c.grammar, c.grammar.initial, 20_000)?.length ?? -1 });
  }
  progress(`coverage: ${results.filter((r) => r.compiled).length}/${results.length} schemas compiled in ${Math.round(performance.now() - t0)} ms`);
  const published = parsePublishedCoverage(readFileSync(join(o.shared, 'schemas/README.md'), 'utf8'));
  const coverage = coverageRows(results.map((r) => ({ subset: r.s.subset, compiled: r.compiled })), published);
  const errorsBySubset = new Map<string, Record<string, number>>();
  for (const r of results) {
    if (r.compiled) continue;
    const e = errorsBySubset.get(r.s.subset) ?? {};
    e[r.error!] = (e[r.error!] ?? 0) + 1;
    errorsBySubset.set(r.s.subset, e);
  }
  for (const row of coverage) o.onRecord({ bench: 'grammar', kind: 'coverage', tokenizer: null, strict: true, ...row, not_compiled: errorsBySubset.get(row.subset) ?? {} });
  const compiledTotal = coverage.reduce((n, r) => n + r.compiled, 0);
  const total = coverage.reduce((n, r) => n + r.total, 0);
  const withFigure = coverage.filter((r) => r.meets_llguidance !== null);
  o.onRecord({
    bench: 'grammar',
    kind: 'coverage',
    tokenizer: null,
    strict: true,
    subset: 'all',
    compiled: compiledTotal,
    total,
    coverage: total ? round(compiledTotal / total, 3) : 0,
    subsets_meeting_llguidance: `${withFigure.filter((r) => r.meets_llguidance).length}/${withFigure.length}`,
  });

  const compiled = results.filter((r) => r.compiled);
  const decodeSchema =
    compiled.find((r) => r.s.id === DEFAULT_DECODE_SCHEMA)?.s ??
    compiled
      .filter((r) => validatorOf(r.s) !== null)
      .reduce<(typeof compiled)[number] | undefined>((best, r) => (best === undefined || r.minimal! > best.minimal! ? r : best), undefined)?.s;

  // ---- per tokenizer: compile and mask ----
  for (const name of o.tokenizers) {
    const tl = performance.now();
    const tok = loadTokenizer(realTokenizerFiles(name));
    const bytes = tokenBytes(tok);
    const loadMs = performance.now() - tl;
    // A fresh array: the vocabulary (its trie and walk cache) is built from scratch for this run.
    const vocab = TokenVocabulary.from(bytes.slice(), { eos: tok.stopIds });
    const closing = closingTokens(vocab);
    const compileMs: number[] = [];
    const firstMaskMs: number[] = [];
    const cold = tally();
    const warm = tally();
    const tw = performance.now();
    for (const [i, r] of compiled.entries()) {
      const c = tryCompile(r.s.schema);
      if ('error' in c) {
        failures.push(`${name} ${r.s.id}: compiled once, then ${c.error}`);
        continue;
      }
      compileMs.push(c.ms);
      const cache = new MaskCache();
      for (const [which, t] of [['cold', cold], ['warm', warm]] as const) {
        const m = new TokenMatcher(c.grammar, vocab, { maskCache: cache });
        const seed = o.seed * 1_000_003 + i * 2 + (which === 'warm' ? 1 : 0);
        let w: ReturnType<typeof walk>;
        try {
          w = walk(m, closing, rng(seed), t.maskUs, t.hits);
        } catch (e) {
          t.invalid++;
          failures.push(`${name} ${which} ${r.s.id}: ${(e as Error).message}`);
          continue;
        }
        if (which === 'cold') firstMaskMs.push(c.ms + w.firstMaskUs / 1000);
        t.documents++;
        t.tokens += w.tokens;
        t.forced += w.forced;
        if (w.searched) t.searched++;
        if (w.unfinished) {
          t.unfinished++;
          unfinished.push(`${name} ${which} ${r.s.id}`);
          continue;
        }
        const check = checkDocument(r.s, w.bytes);
        if (check.valid === null) t.unvalidated++;
        else if (!check.valid) {
          t.invalid++;
          failures.push(`${name} ${which} ${r.s.id}: ${check.reason}: ${new TextDecoder().decode(w.bytes).slice(0, 200)}`);
        }
      }
      if ((i + 1) % 100 === 0) progress(`${name}: ${i + 1}/${compiled.length} schemas walked (${Math.round((performance.now() - tw) / 1000)} s)`);
    }
    const c = summarize(compileMs);
    const f = summarize(firstMaskMs);
    o.onRecord({
      bench: 'grammar',
      kind: 'compile',
      tokenizer: name,
      vocab: vocab.size,
      schemas: compileMs.length,
      compile_ms_p50: c.p50,
      compile_ms_p99: c.p99,
      compile_ms: c,
      first_mask_ms_p50: f.p50,
      first_mask_ms_p99: f.p99,
      first_mask_ms: f,
      tokenizer_load_ms: Math.round(loadMs),
      vocab_build_ms: Math.round(vocab.buildMs),
      target_compile_p50_ms: TARGETS.compile_p50_ms,
    });
    for (const [which, t] of [['cold', cold], ['warm', warm]] as const) {
      const s = summarize(t.maskUs);
      o.onRecord({
        bench: 'grammar',
        kind: 'mask',
        tokenizer: name,
        vocab: vocab.size,
        cache: which,
        p50_us: s.p50,
        p99_us: s.p99,
        mask_us: s,
        cache_hit_rate: t.maskUs.length ? round(t.hits.cached / t.maskUs.length, 3) : null,
        documents: t.documents,
        tokens: t.tokens,
        forced_tokens: t.forced,
        searched_documents: t.searched,
        unfinished_documents: t.unfinished,
        invalid_outputs: t.invalid,
        unvalidated_documents: t.unvalidated,
        target_p50_us: TARGETS.mask_p50_us,
        target_p99_us: TARGETS.mask_p99_us,
      });
    }
    progress(`${name}: ${compiled.length} schemas in ${Math.round((performance.now() - tw) / 1000)} s, walk cache ${vocab.walkCache.size} entries`);
    // Where each mask came from (a cache hit, or which compute path), a repeat pass, the trie and the walk cache:
    // with a fresh vocabulary (a cold walk cache) and freshly compiled grammars, as a server's first requests meet them.
    const fresh = TokenVocabulary.from(bytes.slice(), { eos: tok.stopIds });
    const grammars = compiled.map((r) => compileJsonSchema(r.s.schema, { strict: true }));
    o.onRecord({ bench: 'grammar', kind: 'mask_profile', tokenizer: name, ...profileMasks(fresh, grammars, { random: rng, seed: o.seed }) });
  }
  // The cost of one grammar step (cached, and on first visits): the tokenizer plays no part.
  o.onRecord({ bench: 'grammar', kind: 'step', tokenizer: null, ...measureStepCost() });
  return { decodeSchema, coverage, failures, unfinished };
}
