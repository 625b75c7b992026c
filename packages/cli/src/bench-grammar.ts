// `intab bench grammar`: structured output's figures in one run.
//   coverage, compile, mask   in Node (grammar-bench.ts): JSONSchemaBench
//                             coverage beside the published figures, compile and per-token mask times per tokenizer
//                             over seeded random generations under the masks, every document validated with ajv;
//   peer (--peer xgrammar)    in Node (xgrammar-bench.ts): the same schemas and walks through web-xgrammar as well,
//                             both engines' compile and mask times, coverage and documents side by side;
//   decode                    in headless Chromium on WebGPU (packages/cli/page/bench-grammar.ts, mode 'grammar'): one engine,
//                             the same prompt decoded unconstrained (ignoring EOS) and constrained by a schema of the
//                             sample, alternated --repeats times; medians and the ratio.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wholeFlag, type Flags } from './args.ts';
import { runJob } from './browser.ts';
import { checkDocument, compiles, DEFAULT_DECODE_SCHEMA, loadSample, runNodeBench, type BenchSchema } from './grammar-bench.ts';
import { formatTable } from './grammar-stats.ts';
import { writeSyntheticModel } from './make-model.ts';
import { resolveModel } from './model-files.ts';
import { SHARED } from './repo.ts';
import { PEERS, runPeerBench, type PeerName } from './xgrammar-bench.ts';
import type { RealTokenizerName } from '@intab/testing/tokenizer-corpus';

/** Tokenizers the mask and compile figures are measured with. */
export const BENCH_TOKENIZERS: readonly RealTokenizerName[] = ['qwen3', 'llama3'];
/** The model `bench grammar` makes for the decode part when no --model is given (SwiftShader decodes it at a few tok/s). */
export const DEFAULT_DECODE_MODEL = { like: 'smollm2-135m', dtype: 'q4_0', tokenizer: 'qwen3', seed: 1 };
/** The decode prompt (the model has random weights: only its length matters). */
export const DECODE_PROMPT = 'Fill in the JSON object for this record. Answer with JSON only.';

/** The bench's options from its flags (checked before anything runs). */
export function grammarBenchOptions(flags: Flags) {
  const whole = (name: string, dflt: number, min: number, max: number, example: string) => wholeFlag(flags, name, dflt, min, max, example);
  let tokenizers = BENCH_TOKENIZERS;
  if (flags.tokenizers !== undefined) {
    const named = typeof flags.tokenizers === 'string' ? [...new Set(flags.tokenizers.split(',').map((s) => s.trim()))] : [];
    tokenizers = named as RealTokenizerName[];
    if (!named.length || named.some((t) => !(BENCH_TOKENIZERS as readonly string[]).includes(t))) throw new Error(`--tokenizers needs a comma-separated list of ${BENCH_TOKENIZERS.join(' and ')}, e.g. --tokenizers qwen3`);
  }
  const schemas = flags.schemas === undefined ? undefined : whole('schemas', 100, 1, 100, '20');
  if (flags.model !== undefined && typeof flags.model !== 'string') throw new Error('--model needs a model: --model <gguf file | HF folder | URL> (one with a tokenizer)');
  if (flags['decode-schema'] !== undefined && typeof flags['decode-schema'] !== 'string') throw new Error('--decode-schema needs a schema id of the sample, e.g. --decode-schema Kubernetes/kb_100_Normalized');
  const decode = !flags['no-decode'];
  for (const f of ['model', 'max-tokens', 'repeats', 'decode-schema', 'temperature']) {
    if (!decode && flags[f] !== undefined) throw new Error(`--${f} is for the decode part, which --no-decode skips`);
  }
  if (flags.peer !== undefined && !(PEERS as readonly unknown[]).includes(flags.peer)) throw new Error(`--peer needs one of ${PEERS.join(', ')}, e.g. --peer xgrammar`);
  const temperature = flags.temperature === undefined ? 1 : Number(flags.temperature);
  if (!Number.isFinite(temperature) || temperature < 0) throw new Error('--temperature needs a number of at least 0, e.g. --temperature 1');
  return {
    json: Boolean(flags.json),
    tokenizers,
    schemas,
    seed: whole('seed', 1, 0, 2 ** 31 - 1, '7'),
    decode,
    peer: flags.peer as PeerName | undefined,
    model: typeof flags.model === 'string' ? flags.model : undefined,
    maxTokens: whole('max-tokens', 48, 2, 4096, '48'),
    repeats: whole('repeats', 3, 1, 20, '3'),
    temperature,
    decodeSchema: typeof flags['decode-schema'] === 'string' ? flags['decode-schema'] : undefined,
    timeoutS: whole('timeout', 3600, 1, 86400, '1800'),
    headed: Boolean(flags.headed),
  };
}

/** Columns of the plain-text tables, by record kind. */
const TABLES: Record<string, string[]> = {
  coverage: ['subset', 'compiled', 'total', 'coverage', 'llguidance', 'llama.cpp', 'XGrammar', 'Outlines', 'vs_llguidance'],
  compile: ['tokenizer', 'vocab', 'schemas', 'compile_ms_p50', 'compile_ms_p99', 'first_mask_ms_p50', 'first_mask_ms_p99', 'vocab_build_ms'],
  mask: ['tokenizer', 'cache', 'p50_us', 'p99_us', 'masks', 'max_us', 'cache_hit_rate', 'documents', 'tokens', 'forced_tokens', 'invalid_outputs'],
  peer_coverage: ['tokenizer', 'peer', 'total', 'intab_strict', 'intab_lenient', 'xgrammar', 'both', 'xgrammar_reloads'],
  peer_compile: ['tokenizer', 'engine', 'schemas', 'compile_ms_p50', 'compile_ms_p90', 'compile_ms_p99', 'first_mask_ms_p50', 'first_mask_ms_p99'],
  peer_mask: ['tokenizer', 'engine', 'cache', 'masks', 'p50_us', 'p90_us', 'p99_us', 'max_us'],
  peer_summary: ['tokenizer', 'peer', 'walked_schemas', 'mask_p50_ratio', 'mask_p90_ratio', 'mask_p99_ratio', 'compile_p50_ratio', 'first_mask_p50_ratio', 'coverage_lenient', 'coverage_xgrammar', 'valid_documents', 'invalid_documents', 'met'],
  decode: ['tokenizer', 'schema', 'max_tokens', 'decode_tok_s', 'constrained_decode_tok_s', 'tok_s_ratio', 'ms_per_step', 'constrained_ms_per_step', 'step_slowdown', 'grammar_ms_per_step', 'valid_documents'],
};

/** A record as a table row (nested figures flattened where a column needs them). */
function tableRow(r: Record<string, any>): Record<string, unknown> {
  if (r.kind === 'coverage') return { ...r, ...(r.published ?? {}) };
  if (r.kind === 'mask') return { ...r, masks: r.mask_us?.n, max_us: r.mask_us?.max };
  if (r.kind === 'peer_mask') return { ...r, max_us: r.mask_us?.max };
  return r;
}

export async function benchGrammar(flags: Flags): Promise<number> {
  const o = grammarBenchOptions(flags);
  const shared = SHARED;
  if (!existsSync(join(shared, 'schemas/jsonschemabench/sample_100_per_subset.jsonl'))) {
    throw new Error(`no JSONSchemaBench sample at ${shared}/schemas/jsonschemabench: put ../shared beside the repository or set INTAB_SHARED`);
  }
  const byKind: Record<string, Record<string, unknown>[]> = {};
  let failed = false;
  const emit = (r: Record<string, unknown>) => {
    if (o.json) process.stdout.write(`${JSON.stringify(r)}\n`);
    else (byKind[String(r.kind)] ??= []).push(r);
  };
  const progress = (line: string) => process.stderr.write(`[bench grammar] ${line}\n`);
  const started = performance.now();

  let tmp: string | undefined;
  try {
    const node = (() => {
      const result = runNodeBench({ shared, tokenizers: o.tokenizers, perSubset: o.schemas, seed: o.seed, onRecord: emit, onProgress: progress });
      // The default schema even when --schemas N leaves it out of the node part; else what the node part picked.
      let schema: BenchSchema | undefined = loadSample(shared).find((s) => s.id === (o.decodeSchema ?? DEFAULT_DECODE_SCHEMA));
      if (o.decode && o.decodeSchema !== undefined) {
        if (!schema) throw new Error(`--decode-schema ${o.decodeSchema}: no schema of the sample has that id`);
        if (!compiles(schema.schema)) throw new Error(`--decode-schema ${o.decodeSchema}: the schema does not compile in strict mode; pick one that does`);
      } else if (!schema || !compiles(schema.schema)) schema = result.decodeSchema;
      let modelPath = o.model;
      if (o.decode && modelPath === undefined) {
        tmp = mkdtempSync(join(tmpdir(), 'intab-bench-grammar-'));
        const written = writeSyntheticModel({ ...DEFAULT_DECODE_MODEL, out: join(tmp, `synthetic-${DEFAULT_DECODE_MODEL.like}-${DEFAULT_DECODE_MODEL.tokenizer}.gguf`) });
        progress(`decode model: ${JSON.stringify(written)}`);
        modelPath = written.out;
      }
      return { ...result, schema, modelPath };
    })();
    for (const f of node.failures.slice(0, 40)) process.stderr.write(`[bench grammar] failure: ${f}\n`);
    if (node.failures.length > 40) process.stderr.write(`[bench grammar] ... and ${node.failures.length - 40} more failures\n`);
    if (node.unfinished.length) {
      const more = node.unfinished.length > 12 ? ` and ${node.unfinished.length - 12} more` : '';
      progress(`unfinished (max tokens, no end found; not checked): ${node.unfinished.slice(0, 12).join(', ')}${more}`);
    }
    if (node.failures.length) failed = true;
    progress(`node part done in ${Math.round((performance.now() - started) / 1000)} s`);

    if (o.peer) {
      // The same schemas and walks through web-xgrammar too, in this process (xgrammar-bench.ts).
      const peer = await runPeerBench({ shared, tokenizers: o.tokenizers, perSubset: o.schemas, seed: o.seed, onRecord: emit, onProgress: progress });
      for (const f of peer.failures.slice(0, 40)) process.stderr.write(`[bench grammar] peer failure: ${f}\n`);
      if (peer.failures.length) failed = true;
      progress(`peer part done in ${Math.round((performance.now() - started) / 1000)} s`);
    }

    if (o.decode) {
      if (!node.schema) throw new Error('no schema of the sample compiled: nothing to constrain the decode part with');
      const model = resolveModel(node.modelPath!);
      const texts: string[] = [];
      const job = {
        mode: 'grammar',
        kind: model.kind,
        files: model.files,
        urls: model.urls,
        prompt: DECODE_PROMPT,
        maxTokens: o.maxTokens,
        temperature: o.temperature,
        seed: o.seed,
        repeats: o.repeats,
        ignoreEos: true,
        format: { responseFormat: { type: 'json_schema', schema: node.schema.schema } },
        schemaId: node.schema.id,
        ...(o.model === undefined ? { tokenizerName: DEFAULT_DECODE_MODEL.tokenizer } : {}),
      };
      let line: Record<string, unknown> | undefined;
      const pageFailed = await runJob({
        timeoutS: o.timeoutS,
        headed: o.headed,
        modelDir: model.dir,
        job,
        onRecord(r) {
          if (r.type === 'grammar-text') texts.push(r.text);
          else if (r.type === 'bench' && r.bench === 'grammar') line = r;
        },
      });
      if (pageFailed) failed = true;
      if (line) {
        // Documents that the grammar completed (not cut by max tokens) must validate.
        let complete = 0;
        let valid = 0;
        for (const t of texts) {
          let parsed = true;
          try {
            JSON.parse(t);
          } catch {
            parsed = false;
          }
          if (!parsed) continue;
          complete++;
          const check = checkDocument(node.schema, t);
          if (check.valid !== false) valid++;
          else {
            failed = true;
            process.stderr.write(`[bench grammar] decode: invalid document: ${check.reason}: ${t.slice(0, 200)}\n`);
          }
        }
        const { type, ...rest } = line;
        emit({ ...rest, complete_documents: complete, valid_documents: `${valid}/${complete}` });
      } else failed = true;
    }
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
  if (!o.json) {
    for (const [kind, columns] of Object.entries(TABLES)) {
      const rows = byKind[kind];
      if (!rows?.length) continue;
      console.log(`\n${kind}`);
      console.log(formatTable(columns, rows.map(tableRow)));
    }
  }
  progress(`done in ${Math.round((performance.now() - started) / 1000)} s`);
  return failed ? 1 : 0;
}
