// The model page's job (packages/cli/page/shared.ts, `Job`) from the flags of `intab generate`, `intab bench decode`
// and `intab bench speculative`, checked before anything starts. On its own so the browser runtime (generate.ts) and
// the Node runtime (packages/cli/node) build the very same job.
import { readFileSync } from 'node:fs';
import type { Backend, SpeculativeMethod, SpeculativeOptions } from '@intab/engine/contract';
import type { Job, ModelRef } from '../page/shared.ts';
import type { Flags } from './args.ts';

/** What the job runs: intab generate, intab bench decode ('bench') or intab bench speculative. */
export type JobMode = 'generate' | 'bench' | 'speculative';
type BenchMethod = 'ngram' | 'self' | 'draft';

/** Speculative methods `--speculative` takes, and those `--methods` (bench speculative) measures. */
const SPEC_METHODS = ['ngram', 'draft', 'self', 'auto'];
const BENCH_METHODS: readonly string[] = ['ngram', 'self', 'draft'] satisfies BenchMethod[];
/** What --backend takes (the engine's LoadOptions.backend); the CLI measures intab's kernels ('webgpu') unless told. */
const BACKENDS = ['webgpu', 'auto', 'onnx-wasm', 'onnx-webgpu'];
/** The engine's largest k (MAX_SPECULATIVE_K in @intab/engine). */
const MAX_SPEC_K = 16;

/**
 * --cpu-threads N (LoadOptions.cpuThreads): the threads intab's CPU kernels split each matrix across, 1..56; only on
 * the CPU (--backend onnx-wasm or auto). Above 1 the CLI serves its page cross-origin isolated (runJob), as wasm
 * threads need.
 */
export function cpuThreadsFromFlags(flags: Flags, backend: string): number | undefined {
  const v = flags['cpu-threads'];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n < 1 || n > 56) throw new Error('--cpu-threads needs a whole number from 1 to 56, e.g. --cpu-threads 2');
  if (backend !== 'onnx-wasm' && backend !== 'auto') throw new Error(`--cpu-threads sets the threads of intab's CPU kernels: give it with --backend onnx-wasm (or auto), not ${backend}`);
  return n;
}

/**
 * The job the page runs (packages/cli/page/shared.ts, `Job`), from the command's flags. Modes: 'generate',
 * 'bench' (intab bench decode) and 'speculative' (intab bench speculative). `draft` is the --draft model, resolved.
 */
export function jobFromFlags(flags: Flags, mode: JobMode, model: ModelRef, draft?: ModelRef): Job {
  const num = (name: string, dflt: number | undefined) => {
    const v = flags[name];
    if (v === undefined) return dflt;
    const n = Number(v);
    if (typeof v !== 'string' || !Number.isFinite(n)) throw new Error(`--${name} needs a number`);
    return n;
  };
  const count = (name: string) => {
    const n = num(name, undefined);
    if (n !== undefined && (!Number.isInteger(n) || n < 1)) throw new Error(`--${name} needs a whole number of at least 1, e.g. --${name} 4`);
    return n;
  };
  let promptIds: number[] | undefined;
  const ids = flags['prompt-ids'];
  if (typeof ids === 'string') {
    promptIds = ids.split(',').map((s) => Number(s.trim()));
    if (!promptIds.length || promptIds.some((n) => !Number.isInteger(n) || n < 0)) throw new Error('--prompt-ids needs comma-separated token ids, e.g. 1,403,261');
  } else if (typeof flags.prompt === 'string' || typeof flags.chat === 'string') {
    // encoded in the page with the model's own tokenizer
  } else if (mode === 'generate') {
    throw new Error('one of --prompt-ids, --prompt or --chat is required');
  }
  const spec = speculativeFromFlags(flags, mode, draft !== undefined || flags.draft !== undefined);
  const format = formatFromFlags(flags, mode);
  const quantize = flags.quantize;
  if (quantize !== undefined && quantize !== 'q8_0' && quantize !== 'q4_0') throw new Error('--quantize takes q8_0 or q4_0');
  const backend = flags.backend ?? 'webgpu';
  if (typeof backend !== 'string' || !BACKENDS.includes(backend)) throw new Error(`--backend takes ${BACKENDS.join(', ')}`);
  if (quantize !== undefined && backend.startsWith('onnx-')) throw new Error(`--quantize re-quantizes for intab's WebGPU kernels; --backend ${backend} runs the checkpoint's own weights: drop one of them`);
  const cpuKernels = flags['cpu-kernels'];
  if (cpuKernels !== undefined && cpuKernels !== 'intab' && cpuKernels !== 'onnxruntime') throw new Error('--cpu-kernels takes intab or onnxruntime');
  if (cpuKernels !== undefined && backend !== 'onnx-wasm' && backend !== 'auto') throw new Error(`--cpu-kernels picks what runs a model on the CPU: give it with --backend onnx-wasm (or auto), not ${backend}`);
  const cpuThreads = cpuThreadsFromFlags(flags, backend);
  const concurrency = count('concurrency');
  if (concurrency !== undefined && mode !== 'generate') throw new Error('--concurrency is for intab generate; intab bench decode takes --batch 1,2,4,8');
  let batch: number[] | undefined;
  if (flags.batch !== undefined) {
    if (mode !== 'bench') throw new Error('--batch is for intab bench decode; intab generate takes --concurrency N');
    batch = typeof flags.batch === 'string' ? flags.batch.split(',').map((s) => Number(s.trim())) : [];
    if (!batch.length || batch.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--batch needs comma-separated batch sizes, e.g. --batch 1,2,4,8');
  }
  return {
    mode,
    kind: model.kind,
    files: model.files,
    urls: model.urls,
    promptIds,
    prompt: typeof flags.prompt === 'string' ? flags.prompt : undefined,
    chat: typeof flags.chat === 'string' ? flags.chat : undefined,
    maxTokens: num('max-tokens', mode === 'generate' ? 128 : 64)!,
    temperature: num('temperature', mode === 'generate' ? 0.8 : 0)!,
    topK: num('top-k', undefined),
    topP: num('top-p', undefined),
    seed: num('seed', 0)!,
    quantize,
    ...(cpuKernels ? { cpuKernels: cpuKernels as 'intab' | 'onnxruntime' } : {}),
    ...(cpuThreads ? { cpuThreads } : {}),
    backend: backend as Backend,
    ignoreEos: Boolean(flags['ignore-eos']),
    promptTokens: count('prompt-tokens') ?? (mode === 'speculative' ? 32 : 64),
    concurrency,
    abortAfterTokens: count('abort-after-tokens'),
    batch,
    ...(draft ? { draft: { kind: draft.kind, files: draft.files, urls: draft.urls } } : {}),
    ...spec,
    ...(format ? { format } : {}),
  };
}

/**
 * Constrained output for intab generate: --json-schema FILE, --json-object (any JSON), --grammar FILE (GBNF) or
 * --regex PATTERN, with --lenient (drop schema keywords that cannot be enforced, instead of refusing them).
 */
export function formatFromFlags(flags: Flags, mode: JobMode): Job['format'] {
  const given = ['json-schema', 'json-object', 'grammar', 'regex'].filter((f) => flags[f] !== undefined);
  if (given.length === 0) {
    if (flags.lenient !== undefined) throw new Error('--lenient goes with --json-schema FILE');
    return undefined;
  }
  if (mode !== 'generate') throw new Error(`--${given[0]} is for intab generate`);
  if (given.length > 1) throw new Error(`--${given[0]} and --${given[1]} cannot be combined: pick one of --json-schema, --json-object, --grammar and --regex`);
  const file = (flag: string) => {
    const path = flags[flag];
    if (typeof path !== 'string') throw new Error(`--${flag} needs a file, e.g. --${flag} ${flag === 'grammar' ? 'list.gbnf' : 'schema.json'}`);
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw new Error(`--${flag} ${path}: cannot read it (${(err as Error).message})`);
    }
  };
  if (flags.lenient !== undefined && given[0] !== 'json-schema') throw new Error('--lenient goes with --json-schema FILE');
  if (given[0] === 'json-schema') {
    const text = file('json-schema');
    let schema: unknown;
    try {
      schema = JSON.parse(text);
    } catch (err) {
      throw new Error(`--json-schema ${flags['json-schema']}: not JSON (${(err as Error).message})`);
    }
    return { responseFormat: { type: 'json_schema', schema, ...(flags.lenient !== undefined ? { strict: false } : {}) } as NonNullable<Job['format']>['responseFormat'] };
  }
  if (given[0] === 'json-object') return { responseFormat: { type: 'json_object' } };
  if (given[0] === 'grammar') return { grammar: file('grammar') };
  if (typeof flags.regex !== 'string') throw new Error('--regex needs a pattern, e.g. --regex "[0-9]{3}"');
  return { regex: flags.regex };
}

/**
 * The speculative part of the job: `speculative` (the request option) for intab generate; `methods`,
 * `specK` and `groundedPrompt` for intab bench speculative. Checks the flags that only make sense together.
 */
function speculativeFromFlags(flags: Flags, mode: JobMode, hasDraft: boolean): Pick<Job, 'speculative' | 'methods' | 'specK' | 'groundedPrompt' | 'repeats'> {
  const specK = () => {
    const v = flags['spec-k'];
    if (v === undefined) return undefined;
    const k = Number(v);
    if (typeof v !== 'string' || !Number.isInteger(k) || k < 1 || k > MAX_SPEC_K) throw new Error(`--spec-k needs a whole number of proposals per step from 1 to ${MAX_SPEC_K}, e.g. --spec-k 4`);
    return k;
  };
  if (mode === 'bench') {
    for (const f of ['speculative', 'draft', 'spec-k', 'no-adaptive', 'methods', 'grounded-prompt', 'repeats']) {
      if (flags[f] !== undefined) throw new Error(`--${f} is not for intab bench decode: measure speculative decoding with intab bench speculative`);
    }
    return {};
  }
  if (mode === 'generate') {
    for (const f of ['methods', 'grounded-prompt', 'repeats']) if (flags[f] !== undefined) throw new Error(`--${f} is for intab bench speculative`);
    const method = flags.speculative;
    if (method !== undefined && (typeof method !== 'string' || !SPEC_METHODS.includes(method))) {
      throw new Error('--speculative takes ngram, draft, self or auto, e.g. --speculative ngram');
    }
    if (method === 'draft' && !hasDraft) throw new Error('--speculative draft needs --draft <gguf file | HF folder>: a smaller model with the same vocabulary as --model');
    const k = specK();
    const fixed = flags['no-adaptive'] !== undefined;
    if (method === undefined && !hasDraft && (k !== undefined || fixed)) {
      throw new Error(`--${k !== undefined ? 'spec-k' : 'no-adaptive'} needs --speculative ngram|draft|self|auto`);
    }
    // --draft alone speculates with the draft model: the engine's default ('auto') when one is loaded
    const m = (method ?? 'auto') as SpeculativeMethod;
    if (k === undefined && !fixed) return method === undefined ? {} : { speculative: method as SpeculativeMethod };
    return { speculative: { method: m, ...(k !== undefined ? { k } : {}), ...(fixed ? { adaptive: false } : {}) } as SpeculativeOptions };
  }
  // intab bench speculative
  for (const f of ['speculative', 'no-adaptive']) {
    if (flags[f] !== undefined) throw new Error(`--${f} is for intab generate: intab bench speculative measures --methods ngram,self,draft, each adaptive and with a fixed --spec-k`);
  }
  for (const f of ['chat', 'temperature', 'top-k', 'top-p', 'concurrency', 'abort-after-tokens', 'ignore-eos']) {
    if (flags[f] !== undefined) throw new Error(`--${f} is not for intab bench speculative: it decodes greedily (to compare ids with plain decoding) a --prompt or --prompt-ids`);
  }
  let methods: string[] = hasDraft ? ['ngram', 'self', 'draft'] : ['ngram', 'self'];
  if (flags.methods !== undefined) {
    methods = typeof flags.methods === 'string' ? flags.methods.split(',').map((s) => s.trim()) : [];
    if (!methods.length || methods.some((m) => !BENCH_METHODS.includes(m))) throw new Error('--methods needs a comma-separated list of ngram, self and draft, e.g. --methods ngram,self');
    methods = [...new Set(methods)];
  }
  if (methods.includes('draft') && !hasDraft) throw new Error('--methods draft needs --draft <gguf file | HF folder>: a smaller model with the same vocabulary as --model');
  const grounded = flags['grounded-prompt'];
  if (grounded !== undefined && typeof grounded !== 'string') throw new Error('--grounded-prompt needs text, e.g. --grounded-prompt "..."');
  const repeats = flags.repeats === undefined ? 3 : Number(flags.repeats);
  if (!Number.isInteger(repeats) || repeats < 1 || repeats > 50) throw new Error('--repeats needs a whole number from 1 to 50 (plain/speculative pairs per line), e.g. --repeats 5');
  return { methods: methods as BenchMethod[], specK: specK() ?? 4, repeats, ...(typeof grounded === 'string' ? { groundedPrompt: grounded } : {}) };
}
