// `bench grammar --peer xgrammar` on a few schemas: web-xgrammar loads in Node and compiles, a schema it cannot compile
// is counted (refused in the worker thread that tries each compile first, which is then replaced, so the instance the
// walks use never aborts), one it would compile for ever is a timeout (its worker stopped, not the bench), both engines
// mask every step of the same walks, and each walked document is accepted to its end by both engines, replayed afresh, and valid under ajv. No timing is asserted: only
// that the figures are real numbers of the masks that were made.

import { describe, expect, it } from 'vitest';
import { compileJsonSchema, TokenMatcher, TokenVocabulary } from '@intab/grammar';
import { loadTokenizer, tokenBytes } from '@intab/model';
import { realTokenizerFiles } from '@intab/testing/tokenizer-corpus';
import { grammarBenchOptions } from './bench-grammar.ts';
import { checkFlags, flagsByCommand } from './flags.ts';
import { checkDocument, loadSample, type BenchSchema } from './grammar-bench.ts';
import { parseArgs, USAGE } from './main.ts';
import { SHARED } from './repo.ts';
import { byteLevelVocab, runPeerBench, XGrammarPeer } from './xgrammar-bench.ts';

const TOOL_ARGS: BenchSchema = {
  id: 'test/get_weather',
  subset: 'test',
  schema: {
    type: 'object',
    properties: { location: { type: 'string', minLength: 1 }, unit: { enum: ['celsius', 'fahrenheit'] }, days: { type: 'integer', minimum: 1, maximum: 14 } },
    required: ['location', 'unit'],
    additionalProperties: false,
  },
};
/** A $ref to nothing: web-xgrammar's wasm aborts on it, ours refuses it in strict mode (strict: false drops it). */
const BROKEN: BenchSchema = { id: 'test/broken_ref', subset: 'test', schema: { type: 'object', properties: { a: { $ref: '#/definitions/nope' } }, required: ['a'] } };

describe('web-xgrammar beside @intab/grammar', () => {
  it('takes --peer xgrammar, and nothing else there', () => {
    const flags = (argv: string[]) => parseArgs(['bench', 'grammar', ...argv]).flags;
    expect(grammarBenchOptions(flags(['--peer', 'xgrammar', '--schemas', '2', '--no-decode'])).peer).toBe('xgrammar');
    expect(grammarBenchOptions(flags([])).peer).toBeUndefined();
    expect(() => grammarBenchOptions(flags(['--peer', 'llguidance']))).toThrow(/--peer needs one of xgrammar/);
    expect(() => grammarBenchOptions(flags(['--peer']))).toThrow(/--peer needs one of xgrammar/);
    expect(() => checkFlags('bench grammar', flags(['--peer', 'xgrammar']), flagsByCommand(USAGE))).not.toThrow();
  });

  it('writes token bytes as byte-level strings', () => {
    expect(byteLevelVocab([new TextEncoder().encode('{"a b'), null, Uint8Array.of(0x0a, 0xe4, 0xbd), new Uint8Array(0)])).toEqual(['{"aĠb', '', 'Ċä½', '']);
  });

  it('runs both engines on the same walks, and both accept the same valid documents', async () => {
    const glaive = loadSample(SHARED, 2).filter((s) => s.subset === 'Glaiveai2K');
    expect(glaive).toHaveLength(2);
    // web-xgrammar 0.1.27 never finishes compiling this one (measured: past 10 minutes); ours compiles it in strict mode.
    const endless = loadSample(SHARED).find((s) => s.id === 'Snowplow/sp_333_Normalized')!;
    const schemas = [TOOL_ARGS, BROKEN, endless, ...glaive];
    const records: Record<string, any>[] = [];
    const result = await runPeerBench({ shared: SHARED, tokenizers: ['qwen3'], schemas, seed: 1, onRecord: (r) => records.push(r), compileTimeoutMs: 3000 });
    expect(result.failures).toEqual([]);

    const coverage = records.find((r) => r.kind === 'peer_coverage');
    expect(coverage).toMatchObject({ tokenizer: 'qwen3', total: 5, intab_strict: 4, intab_lenient: 5, xgrammar: 3, both: 3, xgrammar_reloads: 0, xgrammar_timed_out: [endless.id] });
    expect(Object.values(coverage!.xgrammar_not_compiled).sort()).toEqual([1, 1]);

    // Two walks per schema both compile; each ended with both engines done, each step masked by both.
    const walks = result.walks.qwen3;
    expect(walks.map((w) => `${w.id} ${w.cache}`)).toEqual([TOOL_ARGS, ...glaive].flatMap((s) => [`${s.id} cold`, `${s.id} warm`]));
    for (const w of walks) {
      expect(w.end, w.id).toBe('both_complete');
      expect(w.oursMasks).toBeGreaterThan(0);
      expect(w.theirsMasks).toBe(w.oursMasks);
      expect(w.valid, w.id).toBe(true);
    }

    // Replayed afresh: each engine takes every token of each walk, then EOS, and calls the document complete.
    const tok = loadTokenizer(realTokenizerFiles('qwen3'));
    const vocab = TokenVocabulary.from(tokenBytes(tok), { eos: tok.stopIds });
    const peer = await XGrammarPeer.create(vocab.tokens, vocab.size, vocab.eos);
    try {
      for (const w of walks) {
        const s = schemas.find((x) => x.id === w.id)!;
        const ours = new TokenMatcher(compileJsonSchema(s.schema), vocab);
        const c = await peer.compile(s.schema);
        if ('error' in c) throw new Error(`${w.id}: ${c.error}`);
        const theirs = await peer.matcher(c.compiled);
        const eos = vocab.eos[0];
        const body = w.tokens.filter((id) => id !== eos);
        for (const id of body) {
          expect(ours.accept(id), `${w.id}: ours takes ${id}`).toBe(true);
          expect(theirs.acceptToken(id), `${w.id}: web-xgrammar takes ${id}`).toBe(true);
        }
        expect(ours.canEnd).toBe(true);
        expect(theirs.acceptToken(eos)).toBe(true);
        expect(theirs.isTerminated()).toBe(true);
        const text = new TextDecoder().decode(Uint8Array.from(body.flatMap((id) => [...vocab.tokens[id]!])));
        expect(checkDocument(s, text).valid, text).toBe(true);
        theirs.dispose();
        c.compiled.dispose();
      }
    } finally {
      peer.dispose();
    }

    // The figures are of those masks: as many per engine as the walks made, ordered percentiles, ratios of them.
    const masks = walks.reduce((n, w) => n + w.oursMasks, 0);
    for (const engine of ['intab', 'xgrammar']) {
      const all = records.find((r) => r.kind === 'peer_mask' && r.engine === engine && r.cache === 'all')!;
      expect(all.masks).toBe(masks);
      const m = all.mask_us;
      expect(m.p50).toBeGreaterThan(0);
      expect(m.p50).toBeLessThanOrEqual(m.p90);
      expect(m.p90).toBeLessThanOrEqual(m.p99);
      expect(m.p99).toBeLessThanOrEqual(m.max);
      const compile = records.find((r) => r.kind === 'peer_compile' && r.engine === engine)!;
      expect(compile.schemas).toBe(3);
      expect(compile.compile_ms_p50).toBeGreaterThan(0);
    }
    const summary = records.find((r) => r.kind === 'peer_summary')!;
    const ours = records.find((r) => r.kind === 'peer_mask' && r.engine === 'intab' && r.cache === 'all')!;
    const theirs = records.find((r) => r.kind === 'peer_mask' && r.engine === 'xgrammar' && r.cache === 'all')!;
    expect(Math.abs(summary.mask_p90_ratio / (ours.p90_us / theirs.p90_us) - 1)).toBeLessThan(0.01);
    expect(summary).toMatchObject({ walked_schemas: 3, coverage_lenient: 5, coverage_xgrammar: 3, valid_documents: 6, invalid_documents: 0, walks: { both_complete: 6, diverged: 0 } });
  }, 180_000);
});
