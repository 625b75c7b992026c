// `intab bench grammar --peer xgrammar`: @intab/grammar beside web-xgrammar (WebLLM's engine, its wasm build run in
// this Node process) on the same JSONSchemaBench schemas and the same token walks: compile and first-mask times,
// per-token mask times (p50/p90/p99) at the very same grammar states, coverage (ours strict and lenient, theirs), and
// whether both engines judge every walked document complete and ajv finds it valid. Compile is for the vocabulary on
// both sides: web-xgrammar's builds its mask cache, ours is compileJsonSchema then prepareMasks (the masks its segment
// walks make, computed ahead as the engine does; `peer_compile.prepare_ms` is that part). Figures are printed, never
// asserted.

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { runInThisContext } from 'node:vm';
import { Worker } from 'node:worker_threads';
import type { CompiledGrammar, GrammarCompiler, GrammarMatcher, TokenizerInfo } from '@mlc-ai/web-xgrammar';
import { compileJsonSchema, MaskCache, prepareMasks, TokenMatcher, TokenVocabulary, type Grammar } from '@intab/grammar';
import { loadTokenizer, tokenBytes } from '@intab/model';
import { mulberry32 as rng } from '@intab/testing/random';
import { realTokenizerFiles, type RealTokenizerName } from '@intab/testing/tokenizer-corpus';
import { checkDocument, closingTokens, loadSample, MAX_TOKENS, pickWalkToken, searchEnd, walkedBytes, type BenchSchema } from './grammar-bench.ts';
import { round, summarize, type Summary } from './grammar-stats.ts';

/** The peers `--peer` knows. */
export const PEERS = ['xgrammar'] as const;
export type PeerName = (typeof PEERS)[number];

/** The targets, as ratios of ours to web-xgrammar's (issue 24, item 7). */
export const PEER_TARGETS = { mask_p90_ratio: 1, mask_p99_ratio: 0.5, compile_p50_ratio: 1 } as const;

type XGrammarModule = typeof import('@mlc-ai/web-xgrammar');

/**
 * Longest web-xgrammar compile the bench waits for. Some schemas of the sample never finish compiling there (measured:
 * Snowplow/sp_333_Normalized ran past 10 minutes on web-xgrammar 0.1.27 and 2 cores); they count as not compiled.
 */
export const PEER_COMPILE_TIMEOUT_MS = 60_000;

/** web-xgrammar's bundle as a CommonJS module's source (see loadXGrammar), and its path. */
function xgrammarSource(): { file: string; source: string } {
  const file = createRequire(import.meta.url).resolve('@mlc-ai/web-xgrammar');
  const source = readFileSync(file, 'utf8');
  const patched = source.replace("await import('module')", "require('module')");
  if (patched === source) throw new Error(`${file}: not the web-xgrammar build this harness knows (0.1.27); reinstall with pnpm install`);
  return { file, source: patched };
}

/**
 * A fresh instance of web-xgrammar's wasm module. Its file is a UMD bundle in a `"type": "module"` package (Node
 * refuses both `import` and `require` of it), so it is evaluated as the CommonJS it is; its one dynamic
 * `import('module')` becomes a require. A failed compile aborts the wasm instance (emscripten's abort): the caller
 * loads a new one. What the module prints (its FATAL lines) goes to `onPrint`.
 */
export async function loadXGrammar(onPrint: (line: string) => void): Promise<XGrammarModule> {
  const { file, source } = xgrammarSource();
  const require = createRequire(file);
  const mod = { exports: {} as XGrammarModule };
  // emscripten binds console.log/error when the wasm module starts (on the first call): route them to onPrint.
  const { log, error } = console;
  console.log = console.error = (...a: unknown[]) => onPrint(a.map(String).join(' '));
  try {
    const wrapper = runInThisContext(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, { filename: file });
    wrapper(mod.exports, require, mod, file, dirname(file));
    (await mod.exports.TokenizerInfo.createTokenizerInfo([])).dispose();
  } finally {
    console.log = log;
    console.error = error;
  }
  return mod.exports;
}

/** GPT-2's byte-to-character table (bytes_to_unicode): the alphabet of byte-level BPE vocabularies. */
const BYTE_CHARS = (() => {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const chars: string[] = [];
  let n = 0;
  for (let b = 0; b < 256; b++) chars[b] = String.fromCharCode(printable(b) ? b : 256 + n++);
  return chars;
})();

/**
 * Token bytes as the byte-level strings web-xgrammar decodes (`vocabType: 'byte_level'`), so both engines see the
 * same bytes per token; a token without bytes (special, or none) is '' (web-xgrammar never allows those but EOS).
 */
export function byteLevelVocab(tokens: readonly (Uint8Array | null)[]): string[] {
  return tokens.map((b) => (b ? Array.from(b, (x) => BYTE_CHARS[x]).join('') : ''));
}

/** web-xgrammar's reason for refusing a schema, without the FATAL line's source location. */
function peerReason(line: string): string {
  return line.replace(/^.*\[FATAL\] \S+: /, '').slice(0, 160);
}

/** web-xgrammar for one vocabulary: a compiler that survives the failed compiles that abort its wasm instance. */
export class XGrammarPeer {
  private xg!: XGrammarModule;
  private info!: TokenizerInfo;
  private compiler!: GrammarCompiler;
  private printed: string[] = [];
  /** Wasm instances loaded (1 + the failed compiles that aborted one). */
  reloads = -1;

  private constructor(
    private readonly vocab: string[],
    private readonly size: number,
    private readonly eos: readonly number[],
  ) {}

  static async create(tokens: readonly (Uint8Array | null)[], size: number, eos: readonly number[]): Promise<XGrammarPeer> {
    const peer = new XGrammarPeer(byteLevelVocab(tokens), size, eos);
    await peer.reload();
    return peer;
  }

  /** A CompileGuard over the same vocabulary. */
  guard(timeoutMs?: number): CompileGuard {
    return new CompileGuard(this.vocab, this.size, this.eos, timeoutMs);
  }

  private async reload(): Promise<void> {
    this.xg = await loadXGrammar((line) => this.printed.push(line));
    this.info = await this.xg.TokenizerInfo.createTokenizerInfo(this.vocab, 'byte_level', false, this.size, [...this.eos]);
    this.compiler = await this.xg.GrammarCompiler.createGrammarCompiler(this.info, false);
    this.reloads++;
  }

  /**
   * The schema compiled as our grammar's documents look: compact JSON (no whitespace, ',' and ':'), and JSON
   * Schema's own semantics for properties not declared (strictMode false: allowed unless the schema says not).
   */
  async compile(schema: unknown): Promise<{ compiled: CompiledGrammar; ms: number } | { error: string }> {
    this.printed = [];
    const text = JSON.stringify(schema);
    const t0 = performance.now();
    try {
      const compiled = await this.compiler.compileJSONSchema(text, false, -1, [',', ':'], false);
      return { compiled, ms: performance.now() - t0 };
    } catch (e) {
      const fatal = this.printed.find((l) => l.includes('[FATAL]'));
      await this.reload();
      return { error: peerReason(fatal ?? (e as Error)?.message ?? String(e)) };
    }
  }

  async matcher(compiled: CompiledGrammar): Promise<GrammarMatcher> {
    return this.xg.GrammarMatcher.createGrammarMatcher(compiled, [...this.eos]);
  }

  dispose(): void {
    this.compiler.dispose();
    this.info.dispose();
  }
}

/** The worker of CompileGuard: web-xgrammar for one vocabulary, compiling what it is sent (CommonJS, run by eval). */
const GUARD_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createRequire } = require('node:module');
const { dirname } = require('node:path');
const { runInThisContext } = require('node:vm');
const { file, source, vocab, size, eos } = workerData;
const mod = { exports: {} };
let printed = [];
console.log = console.error = (...a) => printed.push(a.map(String).join(' '));
runInThisContext('(function (exports, require, module, __filename, __dirname) {' + source + '\\n})', { filename: file })(mod.exports, createRequire(file), mod, file, dirname(file));
const xg = mod.exports;
const ready = (async () => {
  const info = await xg.TokenizerInfo.createTokenizerInfo(vocab, 'byte_level', false, size, eos);
  return xg.GrammarCompiler.createGrammarCompiler(info, false);
})();
parentPort.on('message', async ({ id, text }) => {
  printed = [];
  try {
    const compiled = await (await ready).compileJSONSchema(text, false, -1, [',', ':'], false);
    compiled.dispose();
    parentPort.postMessage({ id, ok: true });
  } catch (e) {
    const fatal = printed.find((l) => l.includes('[FATAL]'));
    parentPort.postMessage({ id, ok: false, error: String(fatal ?? (e && e.message) ?? e) });
  }
});
`;

/**
 * Tells whether web-xgrammar compiles a schema within `timeoutMs`, by compiling it first in a worker thread that is
 * terminated when it takes longer (a compile in this thread cannot be interrupted: the wasm call never yields). The
 * bench then compiles and times the schema here only when the worker finished; a timeout is the peer's failure to
 * compile. Any failure in the worker starts a new one for the next schema.
 */
export class CompileGuard {
  private worker?: Worker;
  private next = 0;

  constructor(
    private readonly vocab: string[],
    private readonly size: number,
    private readonly eos: readonly number[],
    private readonly timeoutMs = PEER_COMPILE_TIMEOUT_MS,
  ) {}

  /**
   * 'compiled' within the time; 'failed' with web-xgrammar's reason (its FATAL line, or the worker's own failure,
   * e.g. running out of memory); 'timeout' when it ran past the time.
   */
  async check(schema: unknown): Promise<{ outcome: 'compiled' } | { outcome: 'failed' | 'timeout'; error: string }> {
    const worker = (this.worker ??= new Worker(GUARD_WORKER, { eval: true, workerData: { ...xgrammarSource(), vocab: this.vocab, size: this.size, eos: [...this.eos] } }));
    const id = this.next++;
    const result = await new Promise<{ outcome: 'compiled' } | { outcome: 'failed' | 'timeout'; error: string }>((resolve) => {
      const timer = setTimeout(() => resolve({ outcome: 'timeout', error: `compile did not finish in ${this.timeoutMs / 1000} s` }), this.timeoutMs);
      const done = (v: { outcome: 'compiled' } | { outcome: 'failed'; error: string }) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        resolve(v);
      };
      const onMessage = (m: { id: number; ok: boolean; error?: string }) => m.id === id && done(m.ok ? { outcome: 'compiled' } : { outcome: 'failed', error: m.error ?? 'failed' });
      const onError = (e: Error) => done({ outcome: 'failed', error: `the compile's worker failed: ${e.message}` });
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.postMessage({ id, text: JSON.stringify(schema) });
    });
    // A compile that failed aborted the worker's wasm instance, and one that timed out is still running: start over.
    if (result.outcome !== 'compiled') this.close();
    return result;
  }

  close(): void {
    void this.worker?.terminate();
    this.worker = undefined;
  }
}

export interface PeerBenchOptions {
  shared: string;
  tokenizers: readonly RealTokenizerName[];
  /** Schemas per subset (the first N of each); all when undefined. */
  perSubset?: number;
  /** These schemas instead of the sample's (tests). */
  schemas?: readonly BenchSchema[];
  seed: number;
  onRecord: (record: Record<string, unknown>) => void;
  onProgress?: (line: string) => void;
  /** Longest web-xgrammar compile waited for [PEER_COMPILE_TIMEOUT_MS]. */
  compileTimeoutMs?: number;
}

/** One engine's side of the walks. */
interface Side {
  /** Compile for the vocabulary: ours is compileJsonSchema then prepareMasks. */
  compileMs: number[];
  firstMaskMs: number[];
  maskUs: { cold: number[]; warm: number[] };
  /** Ours: the path that made each mask ('cached' or compute-mask.ts's, '+build' when it built a vocabulary walk). */
  paths: { cold: string[]; warm: string[] };
}

/** What the peer part found wrong (walk errors, documents judged differently, invalid documents). */
export interface PeerBenchResult {
  failures: string[];
  /** Per tokenizer: the summary record. */
  summaries: Record<string, Record<string, unknown>>;
  /** Per tokenizer and schema id: both engines' token walks (what tests compare). */
  walks: Record<string, { id: string; cache: 'cold' | 'warm'; end: WalkEnd; tokens: number[]; oursMasks: number; theirsMasks: number; valid: boolean | null }[]>;
}

/** How a walk of both engines ended. */
type WalkEnd = 'both_complete' | 'diverged' | 'unfinished' | 'peer_refused' | 'ours_refused';

interface PeerWalk {
  end: WalkEnd;
  bytes: Uint8Array;
  tokens: number;
  detail?: string;
}

/**
 * One walk driven by both engines at once: at every step both masks are computed (timed) at the same prefix, the
 * next token is drawn from their intersection as `walk` draws from ours (pickWalkToken: EOS after MIN_TOKENS when allowed, else
 * half the time a closing token, else uniform), and both accept it; our forced tokens follow in both. Ends when both
 * accept EOS ('both_complete'); when the intersection is empty, or theirs refuses a token only ours chose (forced,
 * our search's completion, EOS where our grammar is finished): 'diverged', the engines' languages differ there (a
 * keyword one of them drops); when an engine refuses a token its own mask allowed: 'peer_refused' / 'ours_refused'
 * (a failure); at MAX_TOKENS our bounded search finishes the document in both ('unfinished' when it cannot).
 */
async function peerWalk(ours: TokenMatcher, theirs: GrammarMatcher, closing: Int32Array, r: () => number, oursUs: number[], oursPaths: string[], theirsUs: number[]): Promise<PeerWalk> {
  const vocab = ours.vocab;
  const eos = vocab.eos;
  let tokens = 0;
  // A token only ours chose (forced, or our search's completion) that theirs refuses: the languages differ there.
  const diverged = (end: WalkEnd): WalkEnd => (end === 'peer_refused' ? 'diverged' : end);
  /** Both engines take the token; how the walk ends when one refuses it. */
  const take = (id: number): WalkEnd | undefined => {
    if (!ours.accept(id)) return 'ours_refused';
    if (!theirs.acceptToken(id)) return 'peer_refused';
    tokens++;
    return undefined;
  };
  const result = (end: WalkEnd, detail?: string): PeerWalk => ({ end, bytes: walkedBytes(ours.accepted, eos, vocab), tokens, detail });
  while (!ours.done && tokens < MAX_TOKENS) {
    const walks = vocab.walkCache.size;
    let t0 = performance.now();
    const mine = ours.mask();
    oursUs.push((performance.now() - t0) * 1000);
    // '+build': this mask also built a walk of the whole vocabulary under new segment tables (once per vocabulary).
    oursPaths.push(`${ours.lastPath ?? 'none'}${vocab.walkCache.size !== walks ? '+build' : ''}`);
    t0 = performance.now();
    const peer = await theirs.getNextTokenBitmask();
    theirsUs.push((performance.now() - t0) * 1000);
    const both = new Uint32Array(mine.length);
    for (let w = 0; w < mine.length; w++) both[w] = mine[w] & (peer[w] ?? 0);
    const pick = pickWalkToken(both, tokens, eos, closing, r);
    if (pick < 0) return result('diverged', `no token both allow after ${tokens} tokens`);
    const refused = take(pick);
    if (refused) return result(refused, `sampled token ${pick} after ${tokens} tokens`);
    while (!ours.done) {
      const f = ours.forced();
      if (f.length === 0) break;
      for (const id of f) {
        const r2 = take(id);
        if (r2) return result(diverged(r2), `forced token ${id} after ${tokens} tokens`);
      }
    }
  }
  if (!ours.done) {
    if (!ours.canEnd) {
      const path = searchEnd(ours.grammar, ours.state);
      if (path === null) return result('unfinished');
      for (const id of vocab.tokenize(path)) {
        const r2 = take(id);
        if (r2) return result(diverged(r2), `completion token ${id}`);
      }
    }
    const end = eos[0];
    if (end === undefined || !ours.canEnd) return result('unfinished');
    const r2 = take(end);
    if (r2) return result(diverged(r2), 'EOS after our search');
  }
  // Our matcher took EOS, or its grammar allows nothing more (then the engine stops without one): theirs must take
  // EOS there too, and call the document complete.
  if (!theirs.isTerminated() && eos[0] !== undefined && !eos.includes(ours.accepted[ours.accepted.length - 1]) && !theirs.acceptToken(eos[0])) return result('diverged', 'EOS where our grammar is finished');
  return theirs.isTerminated() ? result('both_complete') : result('peer_refused', 'not terminated after EOS');
}

/**
 * Our mask times by the path that made them: a summary per path, and how many of its masks took longer than the
 * peer's p90 (`over_peer_p90`): which paths hold our p90 up.
 */
function byPath(us: readonly number[], paths: readonly string[], peerP90: number): Record<string, Summary & { over_peer_p90: number }> {
  const groups = new Map<string, number[]>();
  paths.forEach((p, i) => {
    let g = groups.get(p);
    if (!g) groups.set(p, (g = []));
    g.push(us[i]);
  });
  return Object.fromEntries([...groups].map(([p, g]) => [p, { ...summarize(g), over_peer_p90: g.filter((x) => x > peerP90).length }]));
}

/**
 * Per tokenizer: every selected schema compiled by ours (strict, and strict: false) and by web-xgrammar (coverage);
 * for each schema both compile (ours strict), compile and first-mask times, then two walks (cold: a fresh mask cache;
 * warm: the same cache, another seed) driven by both engines, every mask of both timed. Records: peer_coverage,
 * peer_compile and peer_mask (one per engine), and peer_summary (ours / theirs ratios, the targets, the documents).
 */
export async function runPeerBench(o: PeerBenchOptions): Promise<PeerBenchResult> {
  const progress = o.onProgress ?? (() => {});
  const sample = o.schemas ?? loadSample(o.shared, o.perSubset);
  const failures: string[] = [];
  const summaries: Record<string, Record<string, unknown>> = {};
  const walks: PeerBenchResult['walks'] = {};
  for (const name of o.tokenizers) {
    const tok = loadTokenizer(realTokenizerFiles(name));
    const bytes = tokenBytes(tok);
    const vocab = TokenVocabulary.from(bytes.slice(), { eos: tok.stopIds });
    const closing = closingTokens(vocab);
    const walked: PeerBenchResult['walks'][string] = (walks[name] = []);
    const tp = performance.now();
    const peer = await XGrammarPeer.create(vocab.tokens, vocab.size, vocab.eos);
    progress(`peer ${name}: web-xgrammar tokenizer info in ${Math.round(performance.now() - tp)} ms`);
    const guardMs = o.compileTimeoutMs ?? PEER_COMPILE_TIMEOUT_MS;
    const guard = peer.guard(guardMs);
    const timedOut: string[] = [];
    /** Ours: the prepareMasks part of each compile. */
    const prepares: number[] = [];
    const ours: Side = { compileMs: [], firstMaskMs: [], maskUs: { cold: [], warm: [] }, paths: { cold: [], warm: [] } };
    const theirs: Side = { compileMs: [], firstMaskMs: [], maskUs: { cold: [], warm: [] }, paths: { cold: [], warm: [] } };
    const coverage = { strict: 0, lenient: 0, xgrammar: 0, both: 0 };
    const peerErrors: Record<string, number> = {};
    const ends: Record<WalkEnd, number> = { both_complete: 0, diverged: 0, unfinished: 0, peer_refused: 0, ours_refused: 0 };
    const divergedWalks: string[] = [];
    let valid = 0;
    let invalid = 0;
    let unvalidated = 0;
    const tw = performance.now();
    for (const [i, s] of sample.entries()) {
      let strict: { grammar: Grammar; ms: number } | undefined;
      try {
        const t0 = performance.now();
        const grammar = compileJsonSchema(s.schema, { strict: true });
        strict = { grammar, ms: performance.now() - t0 };
        coverage.strict++;
        coverage.lenient++;
      } catch {
        try {
          compileJsonSchema(s.schema, { strict: false });
          coverage.lenient++;
        } catch {
          // neither
        }
      }
      // A schema web-xgrammar would compile for ever is its failure, not a hang of the bench; one it fails on in the
      // worker is not compiled again here.
      const checked = await guard.check(s.schema);
      if (checked.outcome === 'timeout') timedOut.push(s.id);
      const c = checked.outcome === 'compiled' ? await peer.compile(s.schema) : { error: peerReason(checked.error) };
      if ('error' in c) {
        const key = c.error.replace(/\d+/g, 'N').slice(0, 80);
        peerErrors[key] = (peerErrors[key] ?? 0) + 1;
      } else coverage.xgrammar++;
      if (strict && !('error' in c)) {
        coverage.both++;
        // Compiled for the vocabulary, as web-xgrammar's compile is (its adaptive mask cache): ours prepares the masks
        // its segment walks make (prepareMasks), into the cache the walks use.
        const cache = new MaskCache();
        const tp0 = performance.now();
        prepareMasks(strict.grammar, vocab, cache);
        const prepareMs = performance.now() - tp0;
        prepares.push(prepareMs);
        ours.compileMs.push(strict.ms + prepareMs);
        theirs.compileMs.push(c.ms);
        for (const which of ['cold', 'warm'] as const) {
          const m = new TokenMatcher(strict.grammar, vocab, { maskCache: cache });
          const tm0 = performance.now();
          const xm = await peer.matcher(c.compiled);
          const matcherMs = performance.now() - tm0;
          const seed = o.seed * 1_000_003 + i * 2 + (which === 'warm' ? 1 : 0);
          const oursUs = ours.maskUs[which];
          const theirsUs = theirs.maskUs[which];
          const n = oursUs.length;
          const nTheirs = theirsUs.length;
          try {
            const w = await peerWalk(m, xm, closing, rng(seed), oursUs, ours.paths[which], theirsUs);
            if (which === 'cold' && oursUs.length > n) {
              ours.firstMaskMs.push(strict.ms + prepareMs + oursUs[n] / 1000);
              theirs.firstMaskMs.push(c.ms + matcherMs + theirsUs[n] / 1000);
            }
            ends[w.end]++;
            if (w.end === 'diverged') divergedWalks.push(`${which} ${s.id}: ${w.detail}`);
            let validity: boolean | null = null;
            if (w.end === 'ours_refused' || w.end === 'peer_refused') failures.push(`peer ${name} ${which} ${s.id}: ${w.end} (${w.detail})`);
            if (w.end === 'both_complete') {
              const check = checkDocument(s, w.bytes);
              validity = check.valid;
              if (check.valid === null) unvalidated++;
              else if (check.valid) valid++;
              else {
                invalid++;
                failures.push(`peer ${name} ${which} ${s.id}: both engines accepted an invalid document: ${check.reason}: ${new TextDecoder().decode(w.bytes).slice(0, 200)}`);
              }
            }
            walked.push({ id: s.id, cache: which, end: w.end, tokens: [...m.accepted], oursMasks: oursUs.length - n, theirsMasks: theirsUs.length - nTheirs, valid: validity });
          } finally {
            xm.dispose();
          }
        }
      }
      if (!('error' in c)) c.compiled.dispose();
      if ((i + 1) % 10 === 0) progress(`peer ${name}: ${i + 1}/${sample.length} schemas (${Math.round((performance.now() - tw) / 1000)} s)`);
    }
    peer.dispose();
    guard.close();

    const total = sample.length;
    o.onRecord({ bench: 'grammar', kind: 'peer_coverage', tokenizer: name, peer: 'xgrammar', total, intab_strict: coverage.strict, intab_lenient: coverage.lenient, xgrammar: coverage.xgrammar, both: coverage.both, xgrammar_not_compiled: peerErrors, xgrammar_timed_out: timedOut, xgrammar_reloads: peer.reloads });
    const sides = [
      ['intab', ours],
      ['xgrammar', theirs],
    ] as const;
    const theirsP90 = summarize([...theirs.maskUs.cold, ...theirs.maskUs.warm]).p90 ?? Infinity;
    const masks: Record<string, Summary> = {};
    const compiles: Record<string, Summary> = {};
    for (const [engine, side] of sides) {
      const cs = (compiles[engine] = summarize(side.compileMs));
      const fm = summarize(side.firstMaskMs);
      const prepare = engine === 'intab' ? { prepare_ms: summarize(prepares) } : {};
      o.onRecord({ bench: 'grammar', kind: 'peer_compile', tokenizer: name, engine, schemas: side.compileMs.length, compile_ms_p50: cs.p50, compile_ms_p90: cs.p90, compile_ms_p99: cs.p99, compile_ms: cs, ...prepare, first_mask_ms_p50: fm.p50, first_mask_ms_p99: fm.p99, first_mask_ms: fm });
      const all = (masks[engine] = summarize([...side.maskUs.cold, ...side.maskUs.warm]));
      for (const cache of ['cold', 'warm', 'all'] as const) {
        const us = cache === 'all' ? [...side.maskUs.cold, ...side.maskUs.warm] : side.maskUs[cache];
        const m = cache === 'all' ? all : summarize(us);
        const paths = cache === 'all' ? [...side.paths.cold, ...side.paths.warm] : side.paths[cache];
        const pathFigures = engine === 'intab' ? { by_path: byPath(us, paths, theirsP90) } : {};
        o.onRecord({ bench: 'grammar', kind: 'peer_mask', tokenizer: name, engine, cache, masks: m.n, p50_us: m.p50, p90_us: m.p90, p99_us: m.p99, mask_us: m, ...pathFigures });
      }
    }
    const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : round(a / b, 3));
    const summary = {
      bench: 'grammar',
      kind: 'peer_summary',
      tokenizer: name,
      peer: 'xgrammar',
      schemas: total,
      walked_schemas: coverage.both,
      mask_p50_ratio: ratio(masks.intab.p50, masks.xgrammar.p50),
      mask_p90_ratio: ratio(masks.intab.p90, masks.xgrammar.p90),
      mask_p99_ratio: ratio(masks.intab.p99, masks.xgrammar.p99),
      compile_p50_ratio: ratio(compiles.intab.p50, compiles.xgrammar.p50),
      first_mask_p50_ratio: ratio(summarize(ours.firstMaskMs).p50, summarize(theirs.firstMaskMs).p50),
      coverage_strict: coverage.strict,
      coverage_lenient: coverage.lenient,
      coverage_xgrammar: coverage.xgrammar,
      walks: ends,
      diverged_walks: divergedWalks.slice(0, 20),
      valid_documents: valid,
      invalid_documents: invalid,
      unvalidated_documents: unvalidated,
      targets: PEER_TARGETS,
      met: {
        mask_p90: masks.intab.p90 !== null && masks.xgrammar.p90 !== null && masks.intab.p90 <= masks.xgrammar.p90 * PEER_TARGETS.mask_p90_ratio,
        mask_p99: masks.intab.p99 !== null && masks.xgrammar.p99 !== null && masks.intab.p99 <= masks.xgrammar.p99 * PEER_TARGETS.mask_p99_ratio,
        compile_p50: compiles.intab.p50 !== null && compiles.xgrammar.p50 !== null && compiles.intab.p50 <= compiles.xgrammar.p50 * PEER_TARGETS.compile_p50_ratio,
        coverage_lenient: coverage.lenient >= coverage.xgrammar,
        invalid_documents: invalid === 0,
      },
    };
    summaries[name] = summary;
    o.onRecord(summary);
    progress(`peer ${name}: ${total} schemas in ${Math.round((performance.now() - tw) / 1000)} s`);
  }
  return { failures, summaries, walks };
}

export type { BenchSchema };
