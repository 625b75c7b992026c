// The Service Worker's OpenAI endpoint in real Chromium, with a real Service Worker (test-relay-sw.ts, registered here
// on this folder) and this page as the engine page (serveOpenAI on its real navigator.serviceWorker; an in-thread
// engine on the CPU reference runner, so that its steps and queue can be watched). The body is pulled end to end: a
// reader of the relayed response that reads one piece and stops leaves the engine's sequence paused, its steps not
// advancing; reading on finishes the very answer the engine gives directly; cancelling while stalled ends the
// engine's request and frees its pages. Then what a page of the scope gets with fetch(): the same answer streamed,
// an abort that frees the sequence, and a 503 with no engine page; and the shared table of cases (@intab/testing's openai-cases.ts)
// through the real Service Worker gives what the core gives when called directly in this page.
// Chromium's own reader of a fetch() answered by a Service Worker drains the body into the page whatever the page
// reads (measured: tens of MB in two seconds behind a stalled reader), so a page's stalled reader cannot hold the
// engine back in this browser; the stalled reader here is the worker's own (see test-relay-sw.ts).
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { EMBED_INPUTS, cosine } from '@intab/testing/embed-inputs';
import type { Engine } from '@intab/engine';
import type { ReferenceRunner } from '@intab/engine/reference';
import { createEngine, wrapEngineApi, type IntabEngine } from './engine.ts';
import { handleOpenAI } from './openai-http.ts';
import { serveOpenAI } from './openai-server.ts';
import { referenceEngine } from './test-fixture.ts';
import { OPENAI_CASES, type CaseContext, type Send } from '@intab/testing/openai-cases';

declare module 'vitest' {
  export interface ProvidedContext {
    embedHubUrl: string;
    embedOracle: { ids: number[][]; vectors: number[][] };
  }
}

const messages = [{ role: 'user', content: 'Say something!' }];
/** No end of turn (ids 2 and 97 are the fixture's EOS and <|im_end|>): the reply runs to max_tokens. */
const NO_EOS = { '2': -100, '97': -100 };
const SCRIPT = new URL('./test-relay-sw.ts', import.meta.url);
/** The cases' engines' context length. */
const CASES_CONTEXT = 1024;
let registration: ServiceWorkerRegistration;
let frame: HTMLIFrameElement;

beforeAll(async () => {
  registration = await navigator.serviceWorker.register(SCRIPT, { type: 'module', scope: new URL('./', SCRIPT).pathname });
  const worker = registration.installing ?? registration.waiting ?? registration.active!;
  if (worker.state !== 'activated') await new Promise<void>((resolve) => worker.addEventListener('statechange', () => worker.state === 'activated' && resolve()));
  frame = document.createElement('iframe');
  frame.src = new URL('./relay-client.html', SCRIPT).href;
  await new Promise((resolve) => {
    frame.onload = resolve;
    document.body.append(frame);
  });
});

afterAll(async () => {
  frame?.remove();
  await registration?.unregister();
});

/** An engine page: this page serves `engine` to the Service Worker until stop(). */
function enginePage(o: { contextLength?: number } = {}) {
  const r = referenceEngine(o);
  const engine = wrapEngineApi(r.engine, r.info, { name: 'tiny-llama' });
  const stop = serveOpenAI(engine);
  return { engine, inner: r.engine as Engine, runner: r.runner as ReferenceRunner, stop };
}

/** A command to the Service Worker's own reader of a relayed response (test-relay-sw.ts), and its reply. */
async function worker<T>(message: { cmd: 'open' | 'read' | 'cancel'; body?: unknown; pieces?: number }): Promise<T> {
  const { port1, port2 } = new MessageChannel();
  const reply = new Promise<T>((resolve) => (port1.onmessage = (e) => resolve(e.data as T)));
  registration.active!.postMessage(message, [port2]);
  const data = await reply;
  port1.close();
  if ((data as { error?: string }).error) throw new Error(`the Service Worker failed: ${(data as { error: string }).error}`);
  return data;
}

/** Lets every task queued so far run, a few times over: whatever was going to happen next has happened. */
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

async function generateText(engine: IntabEngine, maxTokens: number): Promise<string> {
  let text = '';
  for await (const c of engine.generate({ messages, maxTokens, temperature: 0, logitBias: NO_EOS })) text += c.text;
  return text;
}

/** The content of an SSE body of chat.completion.chunk events, and whether [DONE] ends it. */
function sseText(raw: string): { text: string; done: boolean; finish: string | null } {
  const events = raw.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)));
  return {
    text: events.map((e) => e.choices[0]?.delta?.content ?? '').join(''),
    done: raw.trimEnd().endsWith('data: [DONE]'),
    finish: events.at(-1)?.choices[0]?.finish_reason ?? null,
  };
}

describe('backpressure through a real Service Worker', () => {
  test('a reader that reads one piece and stops leaves the sequence paused; reading on finishes the same answer', async () => {
    const p = enginePage();
    try {
      const body = { messages, max_tokens: 150, temperature: 0, stream: true, logit_bias: NO_EOS };
      expect(await worker({ cmd: 'open', body })).toEqual({ status: 200 });
      const first = await worker<{ text: string; done: boolean }>({ cmd: 'read', pieces: 1 });
      expect(first.done).toBe(false);
      // Nothing reads: the engine fills the sequence's queue (maxQueuedChunks), then the sequence sits out of steps.
      await expect.poll(() => p.inner.stats().paused, { timeout: 60_000 }).toBe(1);
      const steps = p.runner.log.length;
      await settle();
      expect(p.inner.stats()).toMatchObject({ streams: 1, running: 1, paused: 1 });
      expect(p.runner.log.length).toBe(steps); // not one step more while nobody reads
      expect(steps).toBeLessThan(40); // far from the 150 tokens asked for
      const rest = await worker<{ text: string; done: boolean }>({ cmd: 'read', pieces: 1e6 });
      expect(rest.done).toBe(true);
      const answer = sseText(first.text + rest.text);
      expect(answer).toMatchObject({ done: true, finish: 'length' });
      expect(answer.text).toBe(await generateText(p.engine, 150));
      expect(p.inner.stats()).toMatchObject({ streams: 0, running: 0, paused: 0, availablePages: p.runner.kv.pages });
    } finally {
      p.stop();
    }
  });

  test('cancelling a stalled response ends the engine\'s request: its pages are back', async () => {
    const p = enginePage();
    try {
      expect(await worker({ cmd: 'open', body: { messages, max_tokens: 150, temperature: 0, stream: true, logit_bias: NO_EOS } })).toEqual({ status: 200 });
      await worker({ cmd: 'read', pieces: 2 });
      await expect.poll(() => p.inner.stats().paused, { timeout: 60_000 }).toBe(1);
      await worker({ cmd: 'cancel' });
      await expect.poll(() => p.inner.stats().streams, { timeout: 60_000 }).toBe(0);
      expect(p.inner.stats()).toMatchObject({ running: 0, paused: 0, availablePages: p.runner.kv.pages });
    } finally {
      p.stop();
    }
  });
});

describe("the official openai client's runTools() against the Service Worker endpoint", () => {
  test("a loop completes: the model's call, the tool's result, the answer", async () => {
    const p = enginePage({ contextLength: CASES_CONTEXT });
    const win = frame.contentWindow as Window & typeof globalThis;
    const openai = new OpenAI({
      baseURL: new URL('v1', win.location.href).href,
      apiKey: 'unused',
      dangerouslyAllowBrowser: true,
      maxRetries: 0,
      // The page the Service Worker controls sends it. The random model calls only when it must: 'required' first,
      // 'none' once the tool's result is in the chat (as an application that wants one round of tools would); and it
      // never ends a turn on its own (it repeats one character), so that round favours its end of turn (<|im_end|>):
      // runTools() refuses an answer cut by max_tokens.
      fetch: (url: RequestInfo | URL, init?: RequestInit) => {
        const body = JSON.parse(String(init?.body ?? '{}'));
        if (body.messages?.some((m: { role: string }) => m.role === 'tool')) Object.assign(body, { tool_choice: 'none', logit_bias: { '97': 100 } });
        return win.fetch(url, { ...init, body: JSON.stringify(body) });
      },
    });
    try {
      const args: unknown[] = [];
      const parameters = { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'], additionalProperties: false };
      const runner = openai.chat.completions.runTools({
        model: 'tiny-llama',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        tools: [{ type: 'function', function: { name: 'get_weather', description: 'The weather.', parameters, function: (a: string) => (args.push(JSON.parse(a)), 'sunny') } }],
        tool_choice: 'required',
        parallel_tool_calls: false,
        max_tokens: 160,
        temperature: 1,
        seed: 3,
        stream: true,
      });
      const answer = await runner.finalContent();
      const roles = runner.messages.map((m) => m.role);
      expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant']);
      const call = (runner.messages[1] as { tool_calls: { id: string; function: { name: string; arguments: string } }[] }).tool_calls[0]!;
      expect(call.function.name).toBe('get_weather');
      expect(args).toEqual([JSON.parse(call.function.arguments)]);
      expect(typeof (args[0] as { city: unknown }).city).toBe('string');
      expect(runner.messages[2]).toMatchObject({ role: 'tool', tool_call_id: call.id, content: 'sunny' });
      expect(typeof answer).toBe('string');
      await expect.poll(() => p.inner.stats().streams, { timeout: 60_000 }).toBe(0);
    } finally {
      p.stop();
    }
  });
});

describe("the official openai client's embeddings.create against the Service Worker endpoint", () => {
  test("an embedding model's engine in this page answers /v1/embeddings: llama.cpp's vectors, base64 and floats, dimensions refused", async () => {
    // The browser tier's global setup serves a seeded all-MiniLM-L6-shaped GGUF and gives llama.cpp's vectors of the inputs.
    const engine = await createEngine({ model: `${inject('embedHubUrl')}/test/minilm/resolve/main/all-minilm-l6.gguf`, backend: 'webgpu', cache: false, worker: false, name: 'minilm' });
    const stop = serveOpenAI(engine);
    const win = frame.contentWindow as Window & typeof globalThis;
    const openai = new OpenAI({ baseURL: new URL('v1', win.location.href).href, apiKey: 'unused', dangerouslyAllowBrowser: true, maxRetries: 0, fetch: (url: RequestInfo | URL, init?: RequestInit) => win.fetch(url, init) });
    try {
      const oracle = inject('embedOracle');
      const input = [0, 5, 19].map((i) => EMBED_INPUTS[i]);
      const got = await openai.embeddings.create({ model: 'minilm', input });
      const floats = await openai.embeddings.create({ model: 'minilm', input, encoding_format: 'float' });
      expect(got).toMatchObject({ object: 'list', model: 'minilm', usage: { prompt_tokens: [0, 5, 19].reduce((n, i) => n + oracle.ids[i].length, 0) } });
      [0, 5, 19].forEach((k, i) => {
        expect(cosine(got.data[i].embedding, oracle.vectors[k])).toBeGreaterThanOrEqual(0.9999);
        expect(got.data[i].embedding).toEqual(floats.data[i].embedding);
      });
      await expect(openai.embeddings.create({ model: 'minilm', input: 'x', dimensions: 8 })).rejects.toMatchObject({ status: 400, param: 'dimensions' });
      // The page's own embeddings.create gives the same numbers.
      expect((await engine.embeddings.create({ input, encoding_format: 'float' })).data.map((d) => d.embedding)).toEqual(floats.data.map((d) => d.embedding));
    } finally {
      stop();
      await engine.destroy();
    }
  });
});

describe('fetch() from a page the Service Worker controls', () => {
  const post = (body: unknown, signal?: AbortSignal) =>
    (frame.contentWindow as Window & typeof globalThis).fetch('v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal });

  test('the stream is the engine\'s answer; an abort mid-stream frees the sequence; no engine page is a 503', async () => {
    expect((frame.contentWindow as Window).navigator.serviceWorker.controller).not.toBeNull();
    const p = enginePage();
    try {
      const res = await post({ messages, max_tokens: 40, temperature: 0, stream: true, logit_bias: NO_EOS });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
      expect(sseText(await res.text())).toEqual({ text: await generateText(p.engine, 40), done: true, finish: 'length' });

      const controller = new AbortController();
      const aborted = await post({ messages, max_tokens: 200, temperature: 0, stream: true, logit_bias: NO_EOS }, controller.signal);
      await aborted.body!.getReader().read();
      controller.abort();
      await expect.poll(() => p.inner.stats().streams, { timeout: 60_000 }).toBe(0);
      expect(p.inner.stats()).toMatchObject({ running: 0, availablePages: p.runner.kv.pages });
    } finally {
      p.stop();
    }
    const none = await post({ messages });
    expect(none.status).toBe(503);
    expect((await none.json()).error).toMatchObject({ type: 'service_unavailable', code: 'no_engine', message: expect.stringMatching(/open the test page/) });
  });
});

describe('one table of cases: through the real Service Worker, what the core answers when called directly', () => {
  /** What the cases need to know of the fixture engine `p` serves. */
  const contextOf = (p: { engine: IntabEngine; inner: Engine; runner: ReferenceRunner }): CaseContext => ({
    model: 'tiny-llama',
    contextLength: p.engine.info.contextLength,
    // Its chat template knows no tools: the generic format (intab writes them into the system message).
    toolFormat: 'generic',
    prompt: 'Say something!',
    noStop: NO_EOS,
    tokenId: 5,
    async idle() {
      await expect.poll(() => p.inner.stats().streams, { timeout: 60_000 }).toBe(0);
      expect(p.inner.stats()).toMatchObject({ running: 0, availablePages: p.runner.kv.pages });
    },
  });
  // fetch() from the page the Service Worker controls, under its prefix (<folder>v1 answers as /v1).
  const viaWorker: Send = (r) => (frame.contentWindow as Window & typeof globalThis).fetch(`v1${r.path.slice('/v1'.length)}`, { method: r.method, body: r.body, signal: r.signal });

  for (const c of OPENAI_CASES) {
    test(c.name, async () => {
      // A context that holds the generic format's tool prompt (the fixture's own is 256 tokens of single characters).
      const r = referenceEngine({ contextLength: CASES_CONTEXT });
      const own = { engine: wrapEngineApi(r.engine, r.info, { name: 'tiny-llama' }), inner: r.engine as Engine, runner: r.runner as ReferenceRunner };
      const direct: Send = async (req) => {
        const res = await handleOpenAI(own.engine, req);
        return new Response(res.body, { status: res.status, headers: res.headers });
      };
      const expected = await c.run(direct, contextOf(own));
      const p = enginePage({ contextLength: CASES_CONTEXT });
      try {
        expect(await c.run(viaWorker, contextOf(p))).toEqual(expected);
      } finally {
        p.stop();
      }
    });
  }
});
