// The Service Worker's OpenAI endpoint, both halves in Node: relayRequest (the worker's half) over real
// MessageChannels to serveOpenAI (the page's half) answering with a real in-thread engine (CPU reference runner,
// tiny ChatML tokenizer). The browser's Service Worker → page messaging is the one stand-in (an EventTarget that
// delivers the message and its port, as navigator.serviceWorker does); e2e/pwa.spec.ts runs the real thing.
// Streams and JSON answers equal the engine's own, errors are OpenAI-shaped with OpenAI's statuses, a client that
// goes away aborts the engine's request, and concurrent clients share engine steps. The body is pulled end to end: a
// reader that stops reading leaves the engine's sequence paused (its queue full, its steps not advancing) and reading
// on finishes the same answer; the page sends one piece per pull, and pushes to an older Service Worker that sends
// none. Only the origin's own pages are answered: what the browser sets and a page cannot forge (Origin,
// Sec-Fetch-Site, the requesting client, the mode) is checked before anything reaches the engine page; relayOpenAI
// given anything but a Service Worker's scope throws a typed error.
import { describe, expect, test } from 'vitest';
import type { Engine } from '@intab/engine';
import type { ReferenceRunner } from '@intab/engine/reference';
import { wrapEngineApi, type IntabEngine } from './engine.ts';
import { IntabError } from '@intab/errors';
import { handleOpenAI } from './openai-http.ts';
import { answerRelayed, serveOpenAI, type RelayReply } from './openai-server.ts';
import { ServiceWorkerScopeError, foreignRequest, relayOpenAI, relayRequest, type RelayClients, type RelayFetchEvent } from './service-worker.ts';
import { decodeSSE } from './sse.ts';
import { referenceEngine } from './test-fixture.ts';
import { OPENAI_CASES, type CaseContext, type Send } from '@intab/testing/openai-cases';

const messages = [{ role: 'user', content: 'Say something!' }];

/** An engine page, and the Service Worker's view of the open pages. */
function setup(o: { pages?: 'engine' | 'none' | 'silent'; contextLength?: number } = {}) {
  const r = referenceEngine({ contextLength: o.contextLength });
  const engine = wrapEngineApi(r.engine, r.info, { name: 'tiny-llama' });
  const container = new EventTarget() as unknown as ServiceWorkerContainer;
  const servedAt = Date.now();
  const stop = serveOpenAI(engine, { container });
  const page = {
    id: 'page-1',
    postMessage(data: unknown, transfer: Transferable[]) {
      if (o.pages === 'silent') return; // a page without an engine never answers the ping
      container.dispatchEvent(new MessageEvent('message', { data, ports: transfer as MessagePort[] }));
    },
  };
  const clients: RelayClients = {
    matchAll: async () => (o.pages === 'none' ? [] : [page]),
    get: async (id) => (id === page.id ? page : undefined),
  };
  const post = (path: string, body: unknown, init: RequestInit = {}) =>
    relayRequest(new Request(`https://app.test${path}`, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), ...init }), clients, { pingTimeoutMs: 200, openHint: 'the chat page' });
  return { engine, inner: r.engine as Engine, runner: r.runner as ReferenceRunner, clients, post, stop, servedAt };
}

async function generateText(engine: IntabEngine, maxTokens: number, logitBias?: Record<number, number>): Promise<string> {
  let text = '';
  for await (const c of engine.generate({ messages, maxTokens, temperature: 0, logitBias })) text += c.text;
  return text;
}

/** Lets every task queued so far run, a few times over: whatever was going to happen next has happened. */
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

/** No end of turn (ids 2 and 97 are the fixture's EOS and <|im_end|>): the reply runs to max_tokens. */
const NO_EOS = { '2': -100, '97': -100 };

describe('the relayed OpenAI endpoint', () => {
  test('stream: true is SSE whose chunks spell what the engine generates; [DONE] ends it', async () => {
    const s = setup();
    const res = await s.post('/v1/chat/completions', { messages, max_tokens: 12, temperature: 0, stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const raw = await res.clone().text();
    expect(raw.trimEnd().endsWith('data: [DONE]')).toBe(true);
    let text = '';
    for await (const chunk of decodeSSE(res)) {
      expect(chunk.object).toBe('chat.completion.chunk');
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    expect(text).toBe(await generateText(s.engine, 12));
  });

  test('stream: false is one chat.completion; GET /v1/models names the model', async () => {
    const s = setup();
    const res = await s.post('/v1/chat/completions', { messages, max_tokens: 9, temperature: 0 });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.object).toBe('chat.completion');
    expect(body.choices[0].message.content).toBe(await generateText(s.engine, 9));
    expect(body.usage.completion_tokens).toBe(9);
    const models = await relayRequest(new Request('https://app.test/v1/models'), s.clients);
    // created: when the page began to serve the model.
    expect(await models.json()).toEqual({ object: 'list', data: [{ id: 'tiny-llama', object: 'model', created: Math.floor(s.servedAt / 1000), owned_by: 'intab', max_model_len: 256, tool_format: 'generic' }] });
  });

  test('bad requests are OpenAI-shaped 4xx errors naming the problem', async () => {
    const s = setup();
    const cases: [Response, number, RegExp, string | null][] = [
      [await s.post('/v1/chat/completions', '{"messages": ['), 400, /not JSON/, null],
      [await s.post('/v1/chat/completions', { messages, n: 2 }), 400, /'n' should be 1/, 'n'],
      [await s.post('/v1/chat/completions', { messages, temperature: -1 }), 400, /temperature/, 'temperature'],
      // Out of range or of the wrong type: named as the body spells it, the bound in the message.
      [await s.post('/v1/chat/completions', { messages, logit_bias: { '5': 101 } }), 400, /from -100 to 100/, 'logit_bias["5"]'],
      [await s.post('/v1/chat/completions', { messages, stop: Array.from({ length: 17 }, (_, i) => `s${i}`) }), 400, /at most 16 stop strings/, 'stop'],
      [await s.post('/v1/chat/completions', { messages, top_logprobs: 21, logprobs: true }), 400, /from 0 to 20/, 'top_logprobs'],
      [await s.post('/v1/chat/completions', { messages, stream: 'yes' }), 400, /true or false/, 'stream'],
      [await s.post('/v1/chat/completions', { messages: [{ role: 'user', content: 5 }] }), 400, /string or an array/, 'messages[0].content'],
      // What only the engine knows (the test model's 128 ids), with the engine's field spelled as the body's.
      [await s.post('/v1/chat/completions', { messages, logit_bias: { '4000': -100 } }), 400, /\[0, 128\)/, 'logit_bias[4000]'],
      [await s.post('/v1/chat/completions', '[{"messages": []}]'), 400, /JSON object/, null],
      [await s.post('/v1/chat/completions', 'null'), 400, /JSON object/, null],
      // Embeddings and rerank are routes of the core: a text model refuses them (an embedding model answers: openai-relay.gpu.test.ts).
      [await s.post('/v1/embeddings', { input: 'x' }), 400, /generates text and cannot embed: load one that embeds/, 'model'],
      [await s.post('/v1/rerank', { query: 'x', documents: ['y'] }), 400, /generates text and cannot rerank: load a reranker/, 'model'],
      [await s.post('/v1/rerank', { query: 'x', documents: [{ title: 'y' }] }), 400, /a string, or an object with a string `text`/, 'documents[0]'],
      [await s.post('/v1/nothing', { input: 'x' }), 404, /POST \/v1\/chat\/completions, POST \/v1\/completions, POST \/v1\/embeddings, POST \/v1\/rerank and GET \/v1\/models/, null],
      [await relayRequest(new Request('https://app.test/v1/chat/completions'), s.clients), 405, /use POST/, null],
      // The legacy completions too (the Service Worker relays every path under its prefix to the core).
      [await s.post('/v1/completions', { prompt: 'x', echo: true }), 400, /'echo' should be false/, 'echo'],
    ];
    for (const [res, status, message, param] of cases) {
      expect(res.status).toBe(status);
      const body = await res.json();
      expect(body.error.message).toMatch(message);
      expect(body.error.type).toBe('invalid_request_error');
      expect(body.error.param).toBe(param);
    }
  });

  test('with no page holding an engine, a 503 that says what to open', async () => {
    for (const pages of ['none', 'silent'] as const) {
      const s = setup({ pages });
      const res = await s.post('/v1/chat/completions', { messages });
      expect(res.status, pages).toBe(503);
      const body = await res.json();
      expect(body.error).toMatchObject({ type: 'service_unavailable', code: 'no_engine' });
      expect(body.error.message).toMatch(/open the chat page/);
    }
  });

  test('the engine page goes away before it answers: a 503 that says to open it again', async () => {
    let gone = false;
    const page = {
      id: 'page-1',
      postMessage(data: unknown, transfer: Transferable[]) {
        const port = transfer[0] as MessagePort;
        if ((data as { type: string }).type === 'intab:ping') port.postMessage({ type: 'intab:pong' });
        else gone = true; // the request arrives as the tab closes: never answered
      },
    };
    const clients: RelayClients = { matchAll: async () => [page], get: async (id) => (gone || id !== page.id ? undefined : page) };
    const res = await relayRequest(new Request('https://app.test/v1/chat/completions', { method: 'POST', body: JSON.stringify({ messages }) }), clients, { pingTimeoutMs: 200 });
    expect(res.status).toBe(503);
    expect((await res.json()).error).toMatchObject({ type: 'service_unavailable', code: 'no_engine', message: expect.stringMatching(/closed before it answered: open it again/) });
  });

  test('under another prefix, the page answers the same paths as under /v1', async () => {
    const s = setup();
    const models = await relayRequest(new Request('https://app.test/api/openai/v1/models'), s.clients, { prefix: '/api/openai/v1/' });
    expect(await models.json()).toMatchObject({ data: [{ id: 'tiny-llama' }] });
  });

  test('a client that goes away mid-stream aborts the engine\'s request: its pages are back', async () => {
    const s = setup();
    const controller = new AbortController();
    const res = await s.post('/v1/chat/completions', { messages, max_tokens: 200, stream: true }, { signal: controller.signal });
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    for (let i = 0; i < 100 && s.inner.stats().streams > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(s.inner.stats()).toMatchObject({ streams: 0, running: 0, availablePages: s.runner.kv.pages });
  });

  test('a reader that stops reading leaves the engine\'s sequence paused; reading on finishes the same answer', async () => {
    const s = setup();
    const res = await s.post('/v1/chat/completions', { messages, max_tokens: 120, temperature: 0, stream: true, logit_bias: NO_EOS });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let raw = decoder.decode((await reader.read()).value, { stream: true });
    // Nothing reads: the engine fills the sequence's queue (maxQueuedChunks), then the sequence sits out of steps.
    await expect.poll(() => s.inner.stats().paused, { timeout: 20_000 }).toBe(1);
    const steps = s.runner.log.length;
    await settle();
    expect(s.inner.stats()).toMatchObject({ streams: 1, running: 1, paused: 1 });
    expect(s.runner.log.length).toBe(steps); // not one step more while nobody reads
    expect(steps).toBeLessThan(40); // far from the 120 tokens asked for: the output waits in the engine, not here
    for (let r = await reader.read(); !r.done; r = await reader.read()) raw += decoder.decode(r.value, { stream: true });
    expect(raw.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const events = raw.split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)));
    const text = events.map((e) => e.choices[0]?.delta?.content ?? '').join('');
    expect(events.at(-1).choices[0].finish_reason).toBe('length');
    expect(text).toBe(await generateText(s.engine, 120, NO_EOS));
    expect(s.inner.stats()).toMatchObject({ streams: 0, running: 0, paused: 0, availablePages: s.runner.kv.pages });
  });

  test('four concurrent clients share engine steps', async () => {
    const s = setup();
    const bodies = [0, 1, 2, 3].map((i) => ({ messages: [{ role: 'user', content: `Client ${i} says hi` }], max_tokens: 16, temperature: 0, stream: true }));
    const texts = await Promise.all(
      bodies.map(async (b) => {
        let text = '';
        for await (const c of decodeSSE(await s.post('/v1/chat/completions', b))) text += c.choices[0]?.delta?.content ?? '';
        return text;
      }),
    );
    expect(texts.every((t) => t.length > 0)).toBe(true);
    expect(s.runner.log.some((step) => step.length === 4)).toBe(true);
  });
});

describe('one table of cases, on the core itself and through the relay: the same statuses, errors and answers', () => {
  /** A fresh engine, the context the cases need, and `send` to the core directly or through the relay. */
  function surface(via: 'core' | 'relay'): { send: Send; ctx: CaseContext } {
    // A context that holds the generic format's tool prompt (the fixture's own is 256 tokens of single characters).
    const s = setup({ contextLength: 1024 });
    const ctx: CaseContext = {
      model: 'tiny-llama',
      contextLength: s.engine.info.contextLength,
      // Its chat template knows no tools: the generic format (intab writes them into the system message).
      toolFormat: 'generic',
      prompt: 'Say something!',
      noStop: NO_EOS,
      tokenId: 5,
      async idle() {
        await expect.poll(() => s.inner.stats().streams, { timeout: 20_000 }).toBe(0);
        expect(s.inner.stats()).toMatchObject({ running: 0, availablePages: s.runner.kv.pages });
      },
    };
    const send: Send =
      via === 'relay'
        ? (r) => relayRequest(new Request(`https://app.test${r.path}`, { method: r.method, body: r.body, signal: r.signal }), s.clients, { pingTimeoutMs: 200 })
        : async (r) => {
            const res = await handleOpenAI(s.engine, r);
            return new Response(res.body, { status: res.status, headers: res.headers });
          };
    return { send, ctx };
  }

  for (const c of OPENAI_CASES) {
    test(c.name, async () => {
      const core = surface('core');
      const direct = await c.run(core.send, core.ctx);
      const relay = surface('relay');
      expect(await c.run(relay.send, relay.ctx)).toEqual(direct);
    });
  }
});

describe('the page half: one body piece per pull', () => {
  /** answerRelayed over a real MessageChannel, with the Service Worker's end in the test's hands. */
  function relayed(o: { pull?: boolean; body?: unknown } = {}) {
    const r = referenceEngine();
    const engine = wrapEngineApi(r.engine, r.info, { name: 'tiny-llama' });
    const { port1, port2 } = new MessageChannel();
    const replies: RelayReply[] = [];
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    port1.onmessage = (m: MessageEvent<RelayReply>) => {
      replies.push(m.data);
      if (m.data.type === 'end') ended();
    };
    const body = JSON.stringify(o.body ?? { messages, max_tokens: 100, temperature: 0, stream: true, logit_bias: NO_EOS });
    const answered = answerRelayed(engine, { type: 'intab:request', method: 'POST', path: '/v1/chat/completions', body, ...(o.pull === undefined ? {} : { pull: o.pull }) }, port2);
    /** The page is done and its last message, the end, has arrived. */
    const done = Promise.all([answered, end]);
    const pieces = () => replies.filter((m) => m.type === 'body').length;
    return { inner: r.engine as Engine, runner: r.runner as ReferenceRunner, port: port1, replies, pieces, done };
  }

  test('no piece before a pull, one per pull; the engine\'s sequence waits paused meanwhile; an abort frees it', async () => {
    const t = relayed({ pull: true });
    await expect.poll(() => t.inner.stats().paused, { timeout: 20_000 }).toBe(1);
    await settle();
    expect(t.replies.map((m) => m.type)).toEqual(['head']); // the head goes at once; the body waits to be asked for
    for (const asked of [1, 3]) {
      for (let i = t.pieces(); i < asked; i++) t.port.postMessage({ type: 'pull' });
      await expect.poll(t.pieces, { timeout: 20_000 }).toBe(asked);
      await settle();
      expect(t.pieces()).toBe(asked);
      await expect.poll(() => t.inner.stats().paused, { timeout: 20_000 }).toBe(1);
    }
    const steps = t.runner.log.length;
    await settle();
    expect(t.runner.log.length).toBe(steps);
    // The client goes away while the page waits for a pull: the engine's request ends and its pages are back.
    t.port.postMessage({ type: 'abort' });
    await t.done;
    expect(t.replies.at(-1)).toEqual({ type: 'end' });
    expect(t.pieces()).toBe(3);
    expect(t.inner.stats()).toMatchObject({ streams: 0, running: 0, availablePages: t.runner.kv.pages });
  });

  test('to a Service Worker that sends no pulls (an older intab), every piece goes as it comes', async () => {
    const t = relayed({ body: { messages, max_tokens: 10, temperature: 0, stream: true, logit_bias: NO_EOS } });
    await t.done;
    const body = t.replies.map((m) => (m.type === 'body' ? m.chunk : '')).join('');
    expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(t.replies.at(-1)).toEqual({ type: 'end' });
    expect(t.inner.stats()).toMatchObject({ streams: 0, running: 0 });
  });
});

describe('relayOpenAI takes a Service Worker\'s scope only', () => {
  test('anything else (a page, a Web Worker, Node, nothing) throws a ServiceWorkerScopeError that says where to call it', () => {
    const cases: [unknown, RegExp][] = [
      [undefined, /given a global\b/], // the default, globalThis: Node's, without clients
      [null, /given null/],
      [{ location: { origin: 'https://app.test' }, addEventListener() {} }, /given a plain object without clients/],
      [new EventTarget(), /given an EventTarget/],
    ];
    for (const [scope, given] of cases) {
      let thrown: unknown;
      try {
        relayOpenAI(scope as Parameters<typeof relayOpenAI>[0]);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(ServiceWorkerScopeError);
      expect(thrown).toBeInstanceOf(IntabError);
      const e = thrown as ServiceWorkerScopeError;
      expect(e).toMatchObject({ name: 'ServiceWorkerScopeError', code: 'not_a_service_worker', caller: 'relayOpenAI' });
      expect(e.message).toMatch(given);
      expect(e.message).toMatch(/navigator\.serviceWorker\.register\('\/sw\.js'\).*serveOpenAI\(engine\)/);
    }
    // Called with no argument in a Service Worker, it takes globalThis, the worker's scope.
    let added: string | undefined;
    const scope = { location: { origin: 'https://app.test' }, clients: { matchAll: async () => [], get: async () => undefined }, addEventListener: (type: string) => (added = type) };
    const g = globalThis as { location?: unknown; clients?: unknown; addEventListener?: unknown };
    Object.assign(g, scope);
    try {
      relayOpenAI();
    } finally {
      delete g.location;
      delete g.clients;
      delete g.addEventListener;
    }
    expect(added).toBe('fetch');
  });
});

describe('who may ask: the origin\'s own pages, with fetch', () => {
  const ORIGIN = 'https://app.test';
  const req = (headers: Record<string, string> = {}, mode: RequestMode = 'cors') => ({ headers: new Headers(headers), mode });

  test('foreignRequest: another origin (Origin, Sec-Fetch-Site, the client), a navigation and no-cors are refused', () => {
    // What a page of the origin sends: nothing to refuse.
    expect(foreignRequest(req(), ORIGIN, `${ORIGIN}/chat`)).toBeUndefined();
    expect(foreignRequest(req({ origin: ORIGIN, 'sec-fetch-site': 'same-origin' }), ORIGIN)).toBeUndefined();
    const refused: [ReturnType<typeof req>, string | undefined, string, RegExp][] = [
      // A cross-site form POST, as Chromium shows it to the worker.
      [req({ origin: 'https://evil.test', 'content-type': 'text/plain' }, 'navigate'), undefined, 'cross_origin', /came from https:\/\/evil\.test: call it from a page of https:\/\/app\.test/],
      [req({ origin: 'null' }), undefined, 'cross_origin', /opaque origin/],
      [req({ 'sec-fetch-site': 'cross-site' }), undefined, 'cross_origin', /a cross-site page/],
      // Another site of the same registrable domain is another origin all the same.
      [req({ 'sec-fetch-site': 'same-site' }), undefined, 'cross_origin', /a same-site page/],
      [req(), 'https://evil.test/page', 'cross_origin', /came from https:\/\/evil\.test/],
      // A link or the address bar: no Origin, no client of another origin, still no answer.
      [req({}, 'navigate'), `${ORIGIN}/chat`, 'navigation', /not navigations .*: call it with fetch/],
      [req({}, 'navigate'), undefined, 'navigation', /not navigations/],
      [req({ 'sec-fetch-site': 'none' }, 'navigate'), undefined, 'navigation', /not navigations/],
      [req({}, 'no-cors'), `${ORIGIN}/chat`, 'no_cors', /call it with fetch's default mode/],
    ];
    for (const [r, client, code, message] of refused) {
      const why = foreignRequest(r, ORIGIN, client);
      expect(why?.code, JSON.stringify([...r.headers, r.mode, client])).toBe(code);
      expect(why!.message).toMatch(message);
    }
  });

  test('relayOpenAI: a foreign request is a 403 in OpenAI\'s format and never reaches the engine page; the page\'s own is answered', async () => {
    const s = setup();
    const sent: string[] = [];
    // The worker's clients: the engine page (of the origin); a client id of another origin resolves to nothing.
    const clients: RelayClients = {
      matchAll: async (o) => (await s.clients.matchAll(o)).map((c) => ({ id: c.id, postMessage: (m: unknown, t: Transferable[]) => (sent.push((m as { type: string }).type), c.postMessage(m, t)) })),
      get: async (id) => (id === 'page-1' ? { id, url: `${ORIGIN}/chat` } : undefined),
    };
    let listener: ((e: RelayFetchEvent) => void) | undefined;
    relayOpenAI({ location: { origin: ORIGIN }, clients, addEventListener: (_type, l) => (listener = l) }, { pingTimeoutMs: 200 });
    const dispatch = (request: Request, clientId: string) => {
      let answer: Promise<Response> | undefined;
      listener!({ request, clientId, respondWith: (r) => (answer = Promise.resolve(r)) });
      return answer;
    };
    const body = JSON.stringify({ messages, max_tokens: 3, temperature: 0 });
    const post = (headers: Record<string, string>, mode?: RequestMode) => new Request(`${ORIGIN}/v1/chat/completions`, { method: 'POST', body, headers, mode });

    for (const [request, clientId, code] of [
      [post({ origin: 'https://evil.test', 'content-type': 'text/plain' }), 'evil-1', 'cross_origin'],
      [post({ 'sec-fetch-site': 'cross-site' }), 'page-1', 'cross_origin'],
      [post({}, 'no-cors'), 'page-1', 'no_cors'],
    ] as const) {
      const res = await dispatch(request, clientId)!;
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ error: { message: expect.stringMatching(/This OpenAI endpoint/), type: 'invalid_request_error', param: null, code } });
    }
    expect(sent).toEqual([]); // the engine page was not even asked whether it holds an engine

    const own = await dispatch(post({ origin: ORIGIN }), 'page-1')!;
    expect(own.status).toBe(200);
    expect((await own.json()).choices[0].message.content).toBe(await generateText(s.engine, 3));
    expect(sent).toEqual(['intab:ping', 'intab:request']);
    // Other paths and origins are not the relay's: no answer, other handlers take them.
    expect(dispatch(new Request(`${ORIGIN}/index.html`), 'page-1')).toBeUndefined();
    expect(dispatch(new Request('https://cdn.test/v1/models'), 'page-1')).toBeUndefined();
  });
});
