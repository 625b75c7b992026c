// The page `intab generate` and `intab bench decode` drive in headless Chromium: it loads the model the
// CLI serves (range requests, like a model hub), runs it on WebGPU with the Runner, and reports every
// token and the final figures through window.__intabReport. The job comes from window.__intabJob.

import { requestGpu, type SamplingParams } from '@intab/gpu';
import { mulberry32 } from '@intab/gpu/reference';
import { Runner, createDetokenizer, encodeChat, openGguf, openHfFolder, openTokenizer, renderChat, urlSource, type ByteSource, type ModelFiles, type Runner as RunnerType } from '@intab/model';

export interface Job {
  mode: 'generate' | 'bench';
  kind: 'gguf' | 'hf';
  /** File names (hf) and their URLs, same order; a single URL ending in / for a remote hf folder. */
  files: string[];
  urls: string[];
  promptIds?: number[];
  /** Plain text, encoded with the model's tokenizer (BOS as the tokenizer adds it). */
  prompt?: string;
  /** One user message, through the model's chat template with the generation prompt. */
  chat?: string;
  maxTokens: number;
  temperature: number;
  topK?: number;
  topP?: number;
  seed: number;
  quantize?: 'q8_0' | 'q4_0';
  ignoreEos?: boolean;
  /** bench: prompt length and decode steps. */
  promptTokens?: number;
}

declare global {
  interface Window {
    __intabJob?: Job;
    __intabReport?: (record: unknown) => void;
    __intabDone?: boolean;
  }
}

const report = (r: unknown) => window.__intabReport?.(r);

async function openModel(job: Job): Promise<ModelFiles> {
  const abs = (u: string) => new URL(u, location.href).href;
  if (job.kind === 'gguf') return openGguf(await Promise.all(job.urls.map((u) => urlSource(abs(u)))));
  const sources = new Map<string, ByteSource>();
  const remoteBase = job.urls.length === 1 && job.urls[0].endsWith('/') ? job.urls[0] : undefined;
  await Promise.all(
    job.files.map(async (name, i) => {
      try {
        sources.set(name, await urlSource(abs(remoteBase ? remoteBase + name : job.urls[i])));
      } catch (err) {
        if (!remoteBase || name === 'config.json') throw err; // optional files may be absent remotely
      }
    }),
  );
  return openHfFolder(sources);
}

/** Bytes the GPU reads for one decode token: every matrix except the embedding (one row), plus norms. */
function bytesPerToken(runner: RunnerType): number {
  const w = runner.weights;
  let bytes = w.output.rowBytes * w.output.n + w.embed.rowBytes;
  for (const l of w.layers) for (const m of [l.q, l.k, l.v, l.o, l.gate, l.up, l.down]) bytes += m.rowBytes * m.n;
  return bytes + (2 * w.layers.length + 1) * runner.config.hidden * 4;
}

async function main(): Promise<void> {
  const job = window.__intabJob;
  if (!job) throw new Error('no job: this page is driven by the intab CLI');
  const gpu = await requestGpu();
  const t0 = performance.now();
  const model = await openModel(job);
  let lastProgress = 0;
  const runner = await Runner.load(gpu, model.config, model.tensors, {
    quantize: job.quantize,
    kvBudgetBytes: 256 << 20,
    onProgress: (p) => {
      if (p.loaded === p.total || p.loaded - lastProgress > p.total / 10) {
        lastProgress = p.loaded;
        report({ type: 'progress', loaded: p.loaded, total: p.total });
      }
    },
  });
  await runner.warmup();
  const loadMs = performance.now() - t0;
  const c = model.config;
  const rng = mulberry32(job.seed);
  const tokenizer = openTokenizer(model);
  if ((job.prompt !== undefined || job.chat !== undefined) && !tokenizer) {
    throw new Error('this model ships no tokenizer (no tokenizer.json, no tokenizer.ggml.* metadata): pass --prompt-ids');
  }
  let prompt = job.promptIds;
  if (job.prompt !== undefined) prompt = tokenizer!.encode(job.prompt, { addSpecialTokens: true });
  if (job.chat !== undefined) prompt = encodeChat(tokenizer!, renderChat(tokenizer!, [{ role: 'user', content: job.chat }], { addGenerationPrompt: true }));
  if (job.mode === 'bench' && !prompt) {
    prompt = Array.from({ length: job.promptTokens ?? 64 }, (_, i) => (i === 0 && c.bosId !== null ? c.bosId : 3 + Math.floor(rng() * (c.vocab - 3))));
  }
  if (!prompt?.length) throw new Error('the prompt is empty: pass --prompt-ids, --prompt or --chat');
  const detok = tokenizer ? createDetokenizer(tokenizer) : undefined;
  const eos = new Set([...c.eosIds, ...(tokenizer?.stopIds ?? [])]);
  const sampling = (): SamplingParams => ({
    temperature: job.temperature,
    topK: job.topK,
    topP: job.topP,
    u: rng(),
  });
  runner.alloc(0);
  const ids: number[] = [];
  const tStart = performance.now();
  let next = (await runner.step([{ seq: 0, tokens: prompt, sampling: sampling() }]))[0].id;
  const ttft = performance.now() - tStart;
  const token = (id: number) => report(detok ? { type: 'token', id, text: detok.push(id) } : { type: 'token', id });
  ids.push(next);
  token(next);
  const tDecode = performance.now();
  while (ids.length < job.maxTokens && (job.ignoreEos || job.mode === 'bench' || !eos.has(next))) {
    next = (await runner.step([{ seq: 0, tokens: [next], sampling: sampling() }]))[0].id;
    ids.push(next);
    token(next);
  }
  const decodeMs = performance.now() - tDecode;
  const decoded = ids.length - 1;
  const perToken = bytesPerToken(runner);
  report({
    type: 'done',
    done: true,
    ids,
    ...(tokenizer ? { text: tokenizer.decode(ids, { skipSpecialTokens: true }) } : {}),
    prompt_tokens: prompt.length,
    generated_tokens: ids.length,
    ttft_ms: round(ttft),
    prefill_tok_s: round((prompt.length / ttft) * 1000),
    decode_tok_s: decoded > 0 ? round((decoded / decodeMs) * 1000) : null,
    weight_bytes_per_token: perToken,
    decode_gbps: decoded > 0 ? round((perToken * decoded) / decodeMs / 1e6) : null,
    load_ms: round(loadMs),
    model: { arch: c.arch, layers: c.layers, hidden: c.hidden, vocab: c.vocab, dtype: runner.weights.layers[0]?.q.dtype, quantize: job.quantize ?? null },
    adapter: [gpu.adapterInfo.vendor, gpu.adapterInfo.architecture, gpu.adapterInfo.description].filter(Boolean).join(' '),
  });
  runner.destroy();
  gpu.destroy();
}

function round(x: number): number {
  return Number(x.toPrecision(4));
}

main()
  .catch((err: Error) => report({ type: 'error', name: err.name, message: err.message }))
  .finally(() => (window.__intabDone = true));
