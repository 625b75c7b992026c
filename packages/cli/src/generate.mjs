// @ts-check
// `intab generate` and `intab bench decode`: serve the model's files to the headless page
// (packages/cli/page/run.html), run it there on WebGPU through the Engine, print its records.
// jobFromFlags turns the flags into the page's job (validated here, before any browser starts).
import { runPage } from './browser.mjs';
import { resolveModel } from './model-files.mjs';

/**
 * The job the page runs (packages/cli/page/run.ts, `Job`), from the command's flags.
 * @param {Record<string, string | boolean>} flags
 * @param {'generate' | 'bench'} mode
 * @param {{ kind: 'gguf' | 'hf', files: string[], urls: string[] }} model
 */
export function jobFromFlags(flags, mode, model) {
  const num = (/** @type {string} */ name, /** @type {number | undefined} */ dflt) => {
    const v = flags[name];
    if (v === undefined) return dflt;
    const n = Number(v);
    if (typeof v !== 'string' || !Number.isFinite(n)) throw new Error(`--${name} needs a number`);
    return n;
  };
  const count = (/** @type {string} */ name) => {
    const n = num(name, undefined);
    if (n !== undefined && (!Number.isInteger(n) || n < 1)) throw new Error(`--${name} needs a whole number of at least 1, e.g. --${name} 4`);
    return n;
  };
  let promptIds;
  if (typeof flags['prompt-ids'] === 'string') {
    promptIds = flags['prompt-ids'].split(',').map((s) => Number(s.trim()));
    if (!promptIds.length || promptIds.some((n) => !Number.isInteger(n) || n < 0)) throw new Error('--prompt-ids needs comma-separated token ids, e.g. 1,403,261');
  } else if (typeof flags.prompt === 'string' || typeof flags.chat === 'string') {
    // encoded in the page with the model's own tokenizer
  } else if (mode === 'generate') {
    throw new Error('one of --prompt-ids, --prompt or --chat is required');
  }
  const quantize = flags.quantize;
  if (quantize !== undefined && quantize !== 'q8_0' && quantize !== 'q4_0') throw new Error('--quantize takes q8_0 or q4_0');
  const concurrency = count('concurrency');
  if (concurrency !== undefined && mode !== 'generate') throw new Error('--concurrency is for intab generate; intab bench decode takes --batch 1,2,4,8');
  /** @type {number[] | undefined} */
  let batch;
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
    maxTokens: num('max-tokens', mode === 'bench' ? 64 : 128),
    temperature: num('temperature', mode === 'bench' ? 0 : 0.8),
    topK: num('top-k', undefined),
    topP: num('top-p', undefined),
    seed: num('seed', 0),
    quantize,
    ignoreEos: Boolean(flags['ignore-eos']),
    promptTokens: num('prompt-tokens', 64),
    concurrency,
    abortAfterTokens: count('abort-after-tokens'),
    batch,
  };
}

/**
 * @param {Record<string, string | boolean>} flags
 * @param {'generate' | 'bench'} mode
 */
export async function generate(flags, mode) {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder | URL> is required');
  const model = resolveModel(flags.model);
  const job = jobFromFlags(flags, mode, model);
  let failed = false;
  await runPage({
    path: '/packages/cli/page/run.html',
    timeoutMs: Number(flags.timeout ?? 3600) * 1000,
    headed: Boolean(flags.headed),
    modelDir: model.dir,
    job,
    onRecord(r) {
      if (r.type === 'error') {
        failed = true;
        console.error(`intab: ${r.name}: ${r.message}`);
        return;
      }
      if (mode === 'bench' && r.type === 'token') return;
      if (r.type === 'progress') {
        // stdout holds only token lines and the final lines; loading progress goes to stderr
        process.stderr.write(`loading ${Math.round((100 * r.loaded) / r.total)}% of ${(r.total / 2 ** 20).toFixed(1)} MiB\n`);
        return;
      }
      if (flags.json) {
        const { type, ...rest } = r;
        process.stdout.write(`${JSON.stringify(mode === 'bench' && type === 'done' ? { bench: 'decode', ...rest } : rest)}\n`);
      } else if (r.type === 'token') {
        // Several streams interleave their tokens: plain text is only readable for one.
        if (r.stream === undefined) process.stdout.write(r.text ?? `${r.id} `);
      } else if (r.type === 'done') {
        process.stdout.write(r.stream === undefined ? `\n${JSON.stringify(r)}\n` : `stream ${r.stream}: ${JSON.stringify(r)}\n`);
      } else if (r.type === 'summary' || r.type === 'bench') {
        process.stdout.write(`${JSON.stringify(r)}\n`);
      }
    },
  });
  return failed ? 1 : 0;
}
