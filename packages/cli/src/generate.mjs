// @ts-check
// `intab generate` and `intab bench decode`: serve the model's files to the headless page
// (packages/cli/page/run.html), run it there on WebGPU, print its records.
import { runPage } from './browser.mjs';
import { resolveModel } from './model-files.mjs';

/**
 * @param {Record<string, string | boolean>} flags
 * @param {'generate' | 'bench'} mode
 */
export async function generate(flags, mode) {
  if (typeof flags.model !== 'string') throw new Error('--model <gguf file | HF folder | URL> is required');
  const model = resolveModel(flags.model);
  const num = (/** @type {string} */ name, /** @type {number | undefined} */ dflt) => {
    const v = flags[name];
    if (v === undefined) return dflt;
    const n = Number(v);
    if (typeof v !== 'string' || !Number.isFinite(n)) throw new Error(`--${name} needs a number`);
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
  const job = {
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
  };
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
        // stdout holds only token lines and the final line; loading progress goes to stderr
        process.stderr.write(`loading ${Math.round((100 * r.loaded) / r.total)}% of ${(r.total / 2 ** 20).toFixed(1)} MiB\n`);
        return;
      }
      if (flags.json) {
        const { type, ...rest } = r;
        process.stdout.write(`${JSON.stringify(mode === 'bench' && type === 'done' ? { bench: 'decode', ...rest } : rest)}\n`);
      } else if (r.type === 'token') {
        process.stdout.write(r.text ?? `${r.id} `);
      } else if (r.type === 'done') {
        process.stdout.write(`\n${JSON.stringify(r)}\n`);
      }
    },
  });
  return failed ? 1 : 0;
}
