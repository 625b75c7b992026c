// The public package in real Chromium with WebGPU and the real module Worker: createEngine over stories260K
// (served by Vite, loaded by URL in the worker, progress reported), greedy ids equal golden.json (both cases
// at once, batched), abort through the signal ends with 'abort', `break` cancels, typed errors cross the
// worker with name and fields, OpenAI chat shapes (stories260K's HF folder as Files plus a tiny ChatML
// tokenizer), the in-thread engine (worker: false), and destroy(). createEngine's default backend ('auto') runs
// onnxruntime's wasm on a software adapter (SwiftShader here); the prefix cache's tests ask for intab's kernels. A q4_0
// GGUF on 'onnx-wasm' runs on intab's CPU kernels in the Worker.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { bytesSource, openGguf } from '@intab/model';
import { loadCpuRunner } from '@intab/onnx';
import { fixtureGguf } from '@intab/testing/fixtures';
import { syntheticGguf } from '@intab/testing/synthetic';
import { sharedUrl } from '@intab/testing/gpu';
import {
  DownloadError,
  DraftMismatchError,
  EngineClosedError,
  IntabError,
  IntabModelError,
  InvalidRequestError,
  ModelKindError,
  ModelSourceError,
  ContextLengthExceededError,
  TokenizerRequiredError,
  UnsupportedSchemaError,
  createEngine,
  modelStore,
  type Chunk,
  type IntabEngine,
  type LoadProgress,
} from './index.ts';
import { tinyChatTokenizerFiles } from '@intab/testing/tiny-tokenizer';
import { EMBED_INPUTS, cosine } from '@intab/testing/embed-inputs';

const BASE = new URL(sharedUrl('models/stories260K/'), location.href).href;

interface Golden {
  cases: { prompt: number[]; greedy: number[] }[];
}

let golden: Golden;
let engine: IntabEngine;
const progress: LoadProgress[] = [];

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const ids = (chunks: Chunk[]) => chunks.flatMap((c) => c.ids);
const greedy = (i: number) => ({ promptIds: golden.cases[i].prompt, maxTokens: golden.cases[i].greedy.length, temperature: 0, ignoreEos: true });

beforeAll(async () => {
  const res = await fetch(BASE + 'golden.json');
  if (!res.ok) throw new Error(`${BASE}golden.json: HTTP ${res.status} (is ../shared beside the repository?)`);
  golden = await res.json();
  engine = await createEngine({ model: BASE + 'stories260K.gguf', kvBudgetBytes: 4 << 20, maxBatch: 4, onProgress: (p) => progress.push(p) });
});

afterAll(async () => {
  await engine?.destroy();
});

describe('createEngine with the worker', () => {
  test('loads in a Worker and reports progress, on the backend auto picks for this adapter', async () => {
    expect(engine.inWorker).toBe(true);
    // 'auto': intab's kernels on a hardware adapter, onnxruntime's wasm where WebGPU is missing or software-only.
    const adapter = await navigator.gpu?.requestAdapter();
    const software = !adapter || adapter.info.isFallbackAdapter;
    expect(engine.info.backend.name).toBe(software ? 'onnx-wasm' : 'webgpu');
    expect(engine.info.backend.reason).toMatch(software ? /software|unavailable/ : /hardware/);
    expect(engine.model).toBe('stories260K.gguf');
    expect(engine.info).toMatchObject({ arch: 'llama', layers: 5, hidden: 64, vocab: 512, hasTokenizer: false, hasChatTemplate: false });
    expect(progress.length).toBeGreaterThan(0);
    const last = progress[progress.length - 1];
    expect(last.total).toBeGreaterThan(0);
    expect(last.loaded).toBe(last.total);
  });

  test('greedy ids equal golden.json, both cases running at once', async () => {
    const [a, b] = await Promise.all([collect(engine.generate(greedy(0))), collect(engine.generate(greedy(1)))]);
    expect(ids(a)).toEqual(golden.cases[0].greedy);
    expect(ids(b)).toEqual(golden.cases[1].greedy);
    for (const chunks of [a, b]) {
      const last = chunks[chunks.length - 1];
      expect(last.finishReason).toBe('length');
      expect(chunks.slice(0, -1).every((c) => c.finishReason === null)).toBe(true);
      expect(last.metrics?.completionTokens).toBe(ids(chunks).length);
    }
    expect(a[a.length - 1].metrics?.promptTokens).toBe(golden.cases[0].prompt.length);
  });

  test("aborting the signal ends the stream with 'abort'; the next request is correct", async () => {
    const controller = new AbortController();
    const chunks: Chunk[] = [];
    for await (const c of engine.generate(greedy(0), { signal: controller.signal })) {
      chunks.push(c);
      if (chunks.length === 2) controller.abort();
    }
    expect(chunks[chunks.length - 1].finishReason).toBe('abort');
    expect(ids(chunks).length).toBeLessThan(golden.cases[0].greedy.length);
    // What was produced before the abort is the golden prefix.
    expect(ids(chunks)).toEqual(golden.cases[0].greedy.slice(0, ids(chunks).length));
    expect(ids(await collect(engine.generate(greedy(1))))).toEqual(golden.cases[1].greedy);
  });

  test('break cancels the request; the next request is correct', async () => {
    let n = 0;
    for await (const c of engine.generate(greedy(0))) {
      expect(c.finishReason).toBeNull();
      if (++n === 1) break;
    }
    expect(ids(await collect(engine.generate(greedy(0))))).toEqual(golden.cases[0].greedy);
  });

  test('errors cross the worker with their class, name and fields', async () => {
    const tooLarge = await collect(engine.generate({ promptIds: [1, 2, 3], maxTokens: 100_000, strictContext: true })).catch((e) => e);
    expect(tooLarge).toBeInstanceOf(ContextLengthExceededError);
    expect(tooLarge).toBeInstanceOf(IntabError);
    expect(tooLarge).toMatchObject({ name: 'ContextLengthExceededError', code: 'context_length_exceeded', reason: 'max-tokens', promptTokens: 3, maxTokens: 100_000, limit: 512, limitedBy: 'context' });
    expect(tooLarge.message).toContain('lower maxTokens to 509 or less, shorten the prompt');

    const noTokenizer = await collect(engine.generate({ prompt: 'Once upon a time' })).catch((e) => e);
    expect(noTokenizer).toBeInstanceOf(TokenizerRequiredError);
    expect(noTokenizer).toMatchObject({ name: 'TokenizerRequiredError', code: 'tokenizer_required', needs: 'tokenizer' });

    const invalid = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], n: 2 }).catch((e) => e);
    expect(invalid).toBeInstanceOf(InvalidRequestError);
    expect(invalid).toMatchObject({ name: 'InvalidRequestError', field: 'n' });
  });

  test('a load failure in the worker rejects createEngine with the typed error (and the store\'s download, with the same)', async () => {
    const err = await createEngine({ model: BASE + 'no-such-model.gguf', cache: false }).catch((e) => e);
    // One class, code and message for a model that cannot be fetched, with the store or without.
    expect(err).toBeInstanceOf(ModelSourceError);
    expect(err).toBeInstanceOf(IntabModelError);
    expect(err).not.toBeInstanceOf(DownloadError);
    expect(err).toMatchObject({ name: 'ModelSourceError', code: 'model_source_unavailable', status: 404 });
    expect(err.message).toContain('no-such-model.gguf: the server answered HTTP 404 (not found): check the URL');
    const stored = await createEngine({ model: BASE + 'no-such-model.gguf' }).catch((e) => e);
    expect(stored).toBeInstanceOf(ModelSourceError);
    expect(stored).toMatchObject({ name: 'ModelSourceError', code: 'model_source_unavailable', status: 404, message: err.message });
  });

  test('a load aborted mid-upload (the signal crosses to the worker) rejects with the reason', async () => {
    const controller = new AbortController();
    const reason = new Error('user went elsewhere');
    const seen: string[] = [];
    const err = await createEngine(
      {
        model: BASE + 'stories260K.gguf',
        cache: false,
        onProgress: (p) => {
          seen.push(p.phase ?? '');
          if (p.phase === 'upload' && p.loaded > 0) controller.abort(reason);
        },
      },
      { signal: controller.signal },
    ).catch((e) => e);
    expect(err).toBe(reason);
    expect(seen).toContain('upload');
  });

  test('an aborted createEngine rejects with the reason', async () => {
    const reason = new Error('page closed');
    await expect(createEngine({ model: BASE + 'stories260K.gguf' }, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    // Mid-load: aborted from the first progress report, while the worker uploads weights.
    const controller = new AbortController();
    let reports = 0;
    const pending = createEngine({ model: BASE + 'stories260K.gguf', onProgress: () => (reports++, controller.abort(reason)) }, { signal: controller.signal });
    await expect(pending).rejects.toBe(reason);
    expect(reports).toBeGreaterThan(0);
  });
});

describe('speculative decoding in the worker', () => {
  test('createEngine({ model, draft }): requests speculate with the draft by default and give the golden ids', async () => {
    const spec = await createEngine({ model: BASE + 'stories260K.gguf', draft: BASE + 'stories260K.gguf', quantize: 'q8_0', kvBudgetBytes: 4 << 20, maxBatch: 4 });
    try {
      expect(spec.inWorker).toBe(true);
      expect(spec.info.draft).toMatchObject({ arch: 'llama', layers: 5, hidden: 64 });
      // The q8_0 target and the q8_0 draft are the same weights: every proposal is accepted.
      const chunks = await collect(spec.generate({ ...greedy(1), speculative: { method: 'auto', k: 4, adaptive: false } }));
      const m = chunks[chunks.length - 1].metrics!.speculative!;
      expect(m).toMatchObject({ method: 'draft' });
      expect(m.accepted).toBe(m.proposed);
      expect(m.verifySteps).toBeGreaterThan(0);
      // Plain decoding on the same engine gives the same ids.
      const plain = await collect(spec.generate({ ...greedy(1), speculative: false }));
      expect(ids(chunks)).toEqual(ids(plain));
      expect(plain[plain.length - 1].metrics!.speculative).toBeUndefined();
      // A request that says nothing speculates ('auto' → the draft).
      const byDefault = await collect(spec.generate({ ...greedy(0), maxTokens: 4 }));
      expect(byDefault[byDefault.length - 1].metrics!.speculative!.method).toBe('draft');
    } finally {
      await spec.destroy();
    }
  });

  test('a draft with another vocabulary rejects createEngine with DraftMismatchError', async () => {
    const other = new File([fixtureGguf('llama').slice()], 'tiny-llama.gguf'); // vocabulary 128, not 512
    const err = await createEngine({ model: BASE + 'stories260K.gguf', draft: other, kvBudgetBytes: 4 << 20 }).catch((e) => e);
    expect(err).toBeInstanceOf(DraftMismatchError);
    expect(err).toMatchObject({ name: 'DraftMismatchError', what: 'vocabulary size', target: '512', draft: '128' });
    expect(err.message).toContain('same family');
  });
});

describe('structured output in the worker', () => {
  test('a json_schema request streams partial-JSON events and ends with a document that validates', async () => {
    // stories260K with its synthetic vocabulary: byte tokens <0x00>..<0xFF> can spell any JSON.
    const structured = await createEngine({ model: BASE + 'stories260K-vocab-ud.gguf', kvBudgetBytes: 4 << 20 });
    try {
      const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 8 }, n: { type: 'integer', minimum: 1, maximum: 99 } }, required: ['name', 'n'], additionalProperties: false };
      const chunks = await collect(structured.generate({ prompt: 'Once', maxTokens: 80, temperature: 1, seed: 4, responseFormat: { type: 'json_schema', schema } }));
      const last = chunks[chunks.length - 1];
      const text = chunks.map((c) => c.text).join('');
      expect(last.finishReason, text).toBe('stop');
      const value = JSON.parse(text) as { name: string; n: number };
      expect(Object.keys(value)).toEqual(['name', 'n']);
      expect(value.name.length).toBeLessThanOrEqual(8);
      expect(Number.isInteger(value.n) && value.n >= 1 && value.n <= 99).toBe(true);
      expect(last.partial).toEqual(value);
      const keys = chunks.flatMap((c) => c.json ?? []).filter((e) => e.kind === 'key').map((e) => e.path.at(-1));
      expect(keys).toEqual(['name', 'n']);
      const err = await collect(structured.generate({ prompt: 'x', responseFormat: { type: 'json_schema', schema: { type: 'array', items: { type: 'string' }, uniqueItems: true } } })).catch((e) => e);
      expect(err).toBeInstanceOf(UnsupportedSchemaError);
      expect(err).toMatchObject({ name: 'UnsupportedSchemaError' });
      expect(err.keywords.map((k: { keyword: string }) => k.keyword)).toContain('uniqueItems');
    } finally {
      await structured.destroy();
    }
  });
});

describe('chat completions in the worker (HF folder as Files, ChatML tokenizer)', () => {
  let chat: IntabEngine;
  const messages = [
    { role: 'system', content: 'You tell stories.' },
    { role: 'user', content: 'Once upon a time' },
  ];

  beforeAll(async () => {
    const tok = tinyChatTokenizerFiles();
    const fetchFile = async (path: string, name: string) => new File([await (await fetch(BASE + path)).arrayBuffer()], name);
    const files = [
      await fetchFile('hf/config.json', 'config.json'),
      await fetchFile('hf/model.safetensors', 'model.safetensors'),
      new File([JSON.stringify(tok.tokenizerJson)], 'tokenizer.json'),
      new File([JSON.stringify(tok.tokenizerConfig)], 'tokenizer_config.json'),
    ];
    // intab's kernels: usage counts the prefix cache's tokens, which onnxruntime's backends do not have.
    chat = await createEngine({ model: files, kvBudgetBytes: 4 << 20, name: 'stories-chat', backend: 'webgpu' });
  });

  afterAll(async () => {
    await chat?.destroy();
  });

  test('streamed chunks have OpenAI shapes and match generate()', async () => {
    expect(chat.info).toMatchObject({ hasTokenizer: true, hasChatTemplate: true });
    const ref = await collect(chat.generate({ messages, maxTokens: 12, temperature: 0, logprobs: true, topLogprobs: 2 }));
    const stream = await chat.chat.completions.create({
      messages,
      max_tokens: 12,
      temperature: 0,
      logprobs: true,
      top_logprobs: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = await collect(stream);
    const content = chunks.slice(0, -2);
    const [finish, usage] = chunks.slice(-2);
    for (const c of chunks) {
      expect([c.object, c.model, c.id, c.created]).toEqual(['chat.completion.chunk', 'stories-chat', chunks[0].id, chunks[0].created]);
    }
    expect(content[0].choices[0].delta.role).toBe('assistant');
    expect(content.slice(1).every((c) => !('role' in c.choices[0].delta))).toBe(true);
    expect(content.map((c) => c.choices[0].delta.content).join('')).toBe(ref.map((c) => c.text).join(''));
    const lp = content.flatMap((c) => c.choices[0].logprobs!.content!);
    expect(lp.map((t) => t.token)).toEqual(ref.flatMap((c) => c.logprobs!.map((t) => t.text)));
    expect(lp.length).toBe(ref.flatMap((c) => c.ids).length);
    expect(lp.every((t) => t.top_logprobs.length === 2 && t.logprob <= 0 && Array.isArray(t.bytes))).toBe(true);
    expect(finish.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: ref[ref.length - 1].finishReason }]);
    expect(usage.choices).toEqual([]);
    const m = ref[ref.length - 1].metrics!;
    // The reference run left the prompt in the worker's prefix cache: all but its last token are reused.
    expect(usage.usage).toEqual({
      prompt_tokens: m.promptTokens,
      completion_tokens: m.completionTokens,
      total_tokens: m.promptTokens + m.completionTokens,
      prompt_tokens_details: { cached_tokens: m.promptTokens - 1 },
    });
  });

  test("a chat-sized max_tokens (512) on stories260K's 512-token context ends with 'length' at the limit; truncate: 'oldest' keeps the system message", async () => {
    // The demo chat's default: clamped to what the context leaves, never refused. The end-of-text and end-of-turn ids are banned.
    const stream = await chat.chat.completions.create({ messages, max_tokens: 512, temperature: 0, logit_bias: { '2': -100, '97': -100 }, stream: true, stream_options: { include_usage: true } });
    const chunks = await collect(stream);
    expect(chunks.at(-2)!.choices[0].finish_reason).toBe('length');
    expect(chunks.at(-1)!.usage!.total_tokens).toBe(512);
    // A long chat: refused with its counts (across the worker), or fitted by dropping its oldest turns.
    const history = Array.from({ length: 12 }, (_, i) => [
      { role: 'user', content: `Tell me story number ${i}, please.` },
      { role: 'assistant', content: `Once upon a time there was a story numbered ${i}. The end.` },
    ]).flat();
    const long = [messages[0], ...history, { role: 'user', content: 'One more?' }];
    const refused = await collect(chat.generate({ messages: long, maxTokens: 8 })).catch((e) => e);
    expect(refused).toBeInstanceOf(ContextLengthExceededError);
    expect(refused).toMatchObject({ name: 'ContextLengthExceededError', reason: 'prompt', limit: 512, limitedBy: 'context' });
    expect(refused.promptTokens).toBeGreaterThan(512);
    const fitted = await collect(chat.generate({ messages: long, maxTokens: 8, truncate: 'oldest', temperature: 0 }));
    const last = fitted.at(-1)!;
    expect(last.truncated!.messages % 2).toBe(0);
    expect(last.truncated!.messages).toBeGreaterThan(0);
    expect(last.metrics!.promptTokens).toBe(refused.promptTokens - last.truncated!.tokens);
    // The same reply as the kept chat sent as is: the system message, the newest turns, the last question.
    const kept = [messages[0], ...long.slice(1 + last.truncated!.messages)];
    expect(ids(fitted)).toEqual(ids(await collect(chat.generate({ messages: kept, maxTokens: 8, temperature: 0 }))));
  });

  test('non-streaming: one chat.completion', async () => {
    const ref = await collect(chat.generate({ messages, maxTokens: 8, temperature: 0 }));
    const res = await chat.chat.completions.create({ messages, max_tokens: 8, temperature: 0 });
    expect(res.object).toBe('chat.completion');
    expect(res.choices).toEqual([
      { index: 0, message: { role: 'assistant', content: ref.map((c) => c.text).join(''), refusal: null }, logprobs: null, finish_reason: ref[ref.length - 1].finishReason },
    ]);
    expect(res.usage.completion_tokens).toBe(ref.flatMap((c) => c.ids).length);
  });
});

describe('embeddings in the worker', () => {
  test("an embedding model: createEngine loads its encoder, embed() and embeddings.create answer (an abort crossing), generate() is a typed ModelKindError", async () => {
    const engine = await createEngine({ model: `${inject('embedHubUrl')}/test/minilm/resolve/main/all-minilm-l6.gguf`, backend: 'webgpu', cache: false });
    try {
      expect(engine.inWorker).toBe(true);
      expect(engine.info.embedding).toEqual({ dimensions: 384, pooling: 'mean', normalized: true, matryoshka: false });
      const oracle = inject('embedOracle');
      const { embeddings, tokens } = await engine.embed({ input: [EMBED_INPUTS[2], EMBED_INPUTS[9]] });
      expect(tokens).toEqual([oracle.ids[2].length, oracle.ids[9].length]);
      expect(cosine(embeddings[0], oracle.vectors[2])).toBeGreaterThanOrEqual(0.9999);
      expect(cosine(embeddings[1], oracle.vectors[9])).toBeGreaterThanOrEqual(0.9999);
      const created = await engine.embeddings.create({ input: EMBED_INPUTS[2], encoding_format: 'base64' });
      expect(typeof created.data[0].embedding).toBe('string');
      const stop = new AbortController();
      const many = engine.embed({ input: Array.from({ length: 200 }, (_, i) => `note ${i}: ${EMBED_INPUTS[i % 20]}`) }, { signal: stop.signal });
      stop.abort(new Error('the user closed the panel'));
      await expect(many).rejects.toThrow('the user closed the panel');
      await expect.poll(async () => (await engine.stats()).embedQueued).toBe(0);
      const err = await (async () => {
        for await (const _ of engine.generate({ prompt: 'hello' })) break;
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelKindError);
      expect(err).toMatchObject({ code: 'wrong_model_kind', kind: 'embedding', call: 'generate' });
    } finally {
      await engine.destroy();
    }
  });
});

describe('in-thread engine (worker: false)', () => {
  test('same golden ids; destroy() closes it', async () => {
    const local = await createEngine({ model: BASE + 'stories260K.gguf', kvBudgetBytes: 4 << 20, worker: false });
    try {
      expect(local.inWorker).toBe(false);
      expect(ids(await collect(local.generate(greedy(1))))).toEqual(golden.cases[1].greedy);
    } finally {
      await local.destroy();
    }
    const err = await collect(local.generate(greedy(0))).catch((e) => e);
    expect(err).toBeInstanceOf(EngineClosedError);
    expect(err.reason).toBe('destroyed');
  });
});

describe('prefix cache in the worker', () => {
  /**
   * A generated model of its own (seed): its saved cache is keyed by its weights, apart from other tests' saves; a
   * system prompt of `tokens` ids, and a greedy request that starts with it.
   */
  const fixture = (seed: number, tokens: number) => {
    const system = Array.from({ length: tokens }, (_, i) => 3 + ((i * 7) % 120));
    return {
      model: () => new File([fixtureGguf('llama', seed) as BlobPart], `prefix-fixture-${seed}.gguf`),
      system,
      request: { promptIds: [...system, 30, 31], maxTokens: 8, temperature: 0, ignoreEos: true },
    };
  };

  test('createEngine({ preload }) pins a prefix; saveCache in the worker; the next createEngine restores it', async () => {
    const { model, system, request } = fixture(4321, 69); // 4 pages of 16 and a partial one
    const first = await createEngine({ model: model(), kvBudgetBytes: 4 << 20, preload: { promptIds: system }, backend: 'webgpu' });
    try {
      expect(first.info.prefixCache).toBe(true);
      expect(first.preloaded).toHaveLength(1);
      expect(first.preloaded[0]).toMatchObject({ tokens: 69, cachedTokens: 0 });
      expect((await first.stats()).prefixCache).toMatchObject({ pinnedPages: 5 });
      const a = await collect(first.generate(request));
      expect(a.at(-1)!.metrics!.cachedTokens).toBe(69);
      const saved = await first.saveCache();
      expect(saved).toMatchObject({ pages: 5, tokens: 69 });
      await first.preloaded[0].release();
      expect((await first.stats()).prefixCache!.pinnedPages).toBe(0);
      const second = await createEngine({ model: model(), kvBudgetBytes: 4 << 20, backend: 'webgpu' });
      try {
        expect(second.info.restored).toMatchObject({ pages: 5, tokens: 69, bytes: saved.bytes });
        const b = await collect(second.generate(request));
        expect(ids(b)).toEqual(ids(a));
        expect(b.at(-1)!.metrics!.cachedTokens).toBe(69);
        const pinned = await second.preload({ promptIds: system });
        expect(pinned.cachedTokens).toBe(69);
        await pinned.release();
      } finally {
        await second.destroy();
      }
      const off = await createEngine({ model: model(), kvBudgetBytes: 4 << 20, prefixCache: false, restoreCache: false, backend: 'webgpu' });
      try {
        expect(off.info.restored).toBeUndefined();
        await expect(off.preload({ promptIds: system })).rejects.toMatchObject({ name: 'EngineStateError' });
      } finally {
        await off.destroy();
      }
    } finally {
      await first.destroy();
    }
  }, 180_000);

  test("on onnx-wasm too: preload, saveCache, and the next createEngine of the same model restores it", async () => {
    const { model, system, request } = fixture(4322, 41); // 2 pages of 16 and a partial one
    const first = await createEngine({ model: model(), kvBudgetBytes: 4 << 20, preload: { promptIds: system }, backend: 'onnx-wasm' });
    try {
      expect(first.info).toMatchObject({ backend: { name: 'onnx-wasm' }, prefixCache: true });
      const a = await collect(first.generate(request));
      expect(a.at(-1)!.metrics!.cachedTokens).toBe(41);
      expect(await first.saveCache()).toMatchObject({ pages: 3, tokens: 41 });
      const second = await createEngine({ model: model(), kvBudgetBytes: 4 << 20, backend: 'onnx-wasm' });
      try {
        expect(second.info.restored).toMatchObject({ pages: 3, tokens: 41 });
        const b = await collect(second.generate(request));
        expect(ids(b)).toEqual(ids(a));
        expect(b.at(-1)!.metrics!.cachedTokens).toBe(41);
      } finally {
        await second.destroy();
      }
    } finally {
      await first.destroy();
    }
  }, 180_000);
});

describe('the model store through createEngine', () => {
  test('the first load downloads into the store, the next one reads it from disk without a request for the model; both give golden ids', async () => {
    const hub = inject('hubUrl');
    const url = `${hub}/test/stories/resolve/main/stories260K.gguf?tag=create-engine`;
    const path = 'GET /test/stories/resolve/main/stories260K.gguf';
    const requests = async () => ((await (await fetch(`${hub}/__requests`)).json()) as Record<string, number>)[path] ?? 0;
    await modelStore.delete(`test/stories@main/stories260K.gguf?tag=create-engine`);
    const phases = (list: LoadProgress[]) => [...new Set(list.map((p) => p.phase))];
    const first: LoadProgress[] = [];
    const before = await requests();
    const a = await createEngine({ model: url, kvBudgetBytes: 4 << 20, onProgress: (p) => first.push(p) });
    try {
      expect(a.info.store).toMatchObject({ id: 'test/stories@main/stories260K.gguf?tag=create-engine', downloaded: 1043424, verified: true });
      expect(phases(first)).toEqual(['download', 'upload']);
      expect(first.find((p) => p.phase === 'download' && p.loaded === p.total)).toBeDefined();
      expect(ids(await collect(a.generate(greedy(1))))).toEqual(golden.cases[1].greedy);
    } finally {
      await a.destroy();
    }
    expect(await requests()).toBe(before + 1);
    const second: LoadProgress[] = [];
    const b = await createEngine({ model: url, kvBudgetBytes: 4 << 20, onProgress: (p) => second.push(p) });
    try {
      expect(b.info.store).toMatchObject({ downloaded: 0, verified: true });
      // Nothing is hashed again: the stored chunks' stamps are the ones recorded when they were written.
      expect(phases(second)).toEqual(['upload']);
      expect(ids(await collect(b.generate(greedy(1))))).toEqual(golden.cases[1].greedy);
    } finally {
      await b.destroy();
    }
    expect(await requests()).toBe(before + 1);
    expect((await modelStore.list()).some((m) => m.id === 'test/stories@main/stories260K.gguf?tag=create-engine' && m.complete)).toBe(true);
  });
});

describe("createEngine on intab's CPU kernels (a q4_0 GGUF without a hardware GPU)", () => {
  const shape = { hidden: 64, ffn: 128, layers: 4, heads: 4, kvHeads: 2, headDim: 16, vocab: 512, ropeTheta: 10000, context: 256 };
  const file = () => new File([syntheticGguf(shape, 'q4_0', 3, { qkScale: 4 }) as Uint8Array<ArrayBuffer>], 'tiny-q4_0.gguf');
  const request = { promptIds: [1, 40, 300, 22, 7, 91, 400, 5], maxTokens: 24, temperature: 0, ignoreEos: true };

  test("'onnx-wasm' runs it in the Worker on the CPU kernels, with the ids of the runner itself; abort stops it; cpuKernels picks onnxruntime", async () => {
    const model = file();
    const cpu = await createEngine({ model, backend: 'onnx-wasm', kvBudgetBytes: 1 << 20 });
    try {
      expect(cpu.inWorker).toBe(true);
      expect(cpu.info).toMatchObject({ backend: { name: 'onnx-wasm' }, adapter: "intab's wasm SIMD128 kernels (q4_0, 1 thread: the page is not cross-origin isolated (serve it with COOP same-origin and COEP require-corp or credentialless))", prefixCache: true });
      // The same runner loaded here, on this thread: the Worker's stream carries its ids.
      const { runner } = await loadCpuRunner(await openGguf(bytesSource('tiny-q4_0.gguf', new Uint8Array(await model.arrayBuffer()))));
      runner.alloc(0);
      let [r] = await runner.step([{ seq: 0, tokens: request.promptIds }]);
      const expected = [r.id];
      while (expected.length < request.maxTokens) expected.push(([r] = await runner.step([{ seq: 0, tokens: [r.id] }]))[0].id);
      runner.destroy();
      expect(ids(await collect(cpu.generate(request)))).toEqual(expected);
      const controller = new AbortController();
      const chunks: Chunk[] = [];
      for await (const c of cpu.generate(request, { signal: controller.signal })) {
        chunks.push(c);
        if (chunks.length === 2) controller.abort();
      }
      expect(chunks.at(-1)!.finishReason).toBe('abort');
      expect(ids(chunks)).toEqual(expected.slice(0, ids(chunks).length));
    } finally {
      await cpu.destroy();
    }
    const ort = await createEngine({ model, backend: 'onnx-wasm', cpuKernels: 'onnxruntime', kvBudgetBytes: 1 << 20 });
    try {
      expect(ort.info.adapter).toMatch(/^onnxruntime-web wasm/);
      expect(ids(await collect(ort.generate(request)))).toHaveLength(request.maxTokens);
    } finally {
      await ort.destroy();
    }
  });
});
