// Micro-benchmark (printed, not asserted): per-token mask time p50/p99 on Qwen3 (151k) and Llama 3 (128k), over a
// realistic run: random generation under the mask for JSONSchemaBench schemas (the first compiled of each subset).
//   cold    fresh grammars, fresh mask caches, and the vocabulary's loop/chain walks dropped first: every state is
//           new (this includes the grammar's own cost of creating states);
//   warm    the same grammars and caches, new documents (other seeds): what a server sees once it has run a schema;
//   repeat  the cold documents again: every mask a cache hit.
// Prints one line per vocabulary: `[grammar bench] {...}`.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadTokenizer } from '../../../model/src/tokenizer/tokenizer.ts';
import { realTokenizerFiles, type RealTokenizerName } from '../../../model/src/tokenizer/test-corpus.ts';
import { tokenBytes } from '../../../model/src/tokenizer/token-bytes.ts';
import type { Grammar } from '../grammar.ts';
import { compileJsonSchema } from '../index.ts';
import { MaskCache } from './mask-cache.ts';
import { TokenMatcher } from './matcher.ts';
import { randomWalk, rng } from './test-grammars.ts';
import { TokenVocabulary } from './vocabulary.ts';

const SHARED = process.env.INTAB_SHARED ? join(process.env.INTAB_SHARED, '/') : fileURLToPath(new URL('../../../../../shared/', import.meta.url));
const PER_SUBSET = 6;
const DOCS = 2;

function schemas(): { id: string; schema: unknown }[] {
  const lines = readFileSync(join(SHARED, 'schemas/jsonschemabench/sample_100_per_subset.jsonl'), 'utf8').trim().split('\n');
  const taken = new Map<string, number>();
  const out: { id: string; schema: unknown }[] = [];
  for (const line of lines) {
    const s = JSON.parse(line) as { id: string; subset: string; schema: unknown };
    if ((taken.get(s.subset) ?? 0) >= PER_SUBSET) continue;
    try {
      compileJsonSchema(s.schema);
    } catch {
      continue;
    }
    taken.set(s.subset, (taken.get(s.subset) ?? 0) + 1);
    out.push(s);
  }
  return out;
}

function stats(us: number[]): { n: number; p50: number; p90: number; p99: number; max: number; mean: number } {
  const s = [...us].sort((a, b) => a - b);
  const q = (p: number) => Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0);
  return { n: s.length, p50: q(0.5), p90: q(0.9), p99: q(0.99), max: Math.round(s[s.length - 1] ?? 0), mean: Math.round(s.reduce((a, b) => a + b, 0) / Math.max(1, s.length)) };
}

describe.each<RealTokenizerName>(['qwen3', 'llama3'])('mask benchmark: %s', (name) => {
  it('prints mask p50/p99, cold / warm / repeat', () => {
    const tok = loadTokenizer(realTokenizerFiles(name));
    const bytes = tokenBytes(tok);
    const vocab = TokenVocabulary.from(bytes.slice(), { eos: tok.stopIds }); // its own copy: a build from scratch
    const list = schemas();
    const grammars: Grammar[] = list.map((s) => compileJsonSchema(s.schema));
    const caches = grammars.map(() => new MaskCache());
    vocab.walkCache.clear();
    const run = (seed: number) => {
      const times: number[] = [];
      const byPath: Record<string, number[]> = {};
      const slow: string[] = [];
      let tokens = 0;
      grammars.forEach((g, i) => {
        for (let d = 0; d < DOCS; d++) {
          const m = new TokenMatcher(g, vocab, { maskCache: caches[i] });
          const walk = randomWalk(m, bytes, vocab.eos, rng(seed + i * 31 + d), {
            budget: 32,
            finishRate: 0.25,
            maxTokens: 4000,
            onMask: (mask) => {
              const t0 = performance.now();
              const out = mask();
              const us = (performance.now() - t0) * 1000;
              times.push(us);
              (byPath[m.lastPath!] ??= []).push(us);
              if (us > 2000 && slow.length < 12) slow.push(`${list[i].id} ${m.lastPath} ${Math.round(us)}us`);
              return out;
            },
          });
          tokens += walk.ids.length;
        }
      });
      return { ...stats(times), tokens, byPath: Object.fromEntries(Object.entries(byPath).map(([k, v]) => [k, stats(v)])), slow };
    };
    const cold = run(1);
    const warm = run(7777);
    const repeat = run(1);
    const line = {
      tokenizer: name,
      vocab: vocab.size,
      trieNodes: vocab.trie.nodeCount,
      trieBuildMs: Math.round(vocab.buildMs),
      schemas: list.length,
      maskUs: { cold, warm, repeat },
      walkCacheEntries: vocab.walkCache.size,
      walkCacheMB: Math.round([...(vocab.walkCache as Map<string, { bytes: number }>).values()].reduce((n, w) => n + w.bytes, 0) / 1e5) / 10,
    };
    console.log(`[grammar bench] ${JSON.stringify(line)}`);
    expect(cold.n).toBeGreaterThan(100);
  }, 300_000);
});
