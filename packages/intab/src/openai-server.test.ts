// The page's dispatcher of relayed OpenAI requests (openai-server.ts), in Node: one 'message' listener per Service
// Worker container however many engines the page serves, so a ping gets one pong and a request one answer; the engine
// that answers is serveOpenAI's before a shared engine's own, the most recent first, or the one the request names; the
// stop functions take an engine out, and a request that arrives after the last one stopped gets a 503, not silence.
// An engine attached to the origin's shared engine (info.share.mode 'shared-worker') serves by itself until destroy(),
// not while its backend is dead, and not with serveOpenAI: false or on a tab's own engine. The container is the one
// stand-in (an EventTarget that delivers a message and its port, as navigator.serviceWorker does); the engines are
// real in-thread engines on the CPU reference runner.
import { afterEach, describe, expect, test, vi } from 'vitest';
import type { ModelInfo } from '@intab/engine/contract';
import { CallGuard } from './engine-backends.ts';
import { EngineFacade } from './engine-facade.ts';
import { createEngine, wrapEngineApi, type IntabEngine } from './engine.ts';
import { InvalidArgumentError } from './errors.ts';
import { serveOpenAI } from './openai-server.ts';
import { referenceEngine, relayChannel } from './test-fixture.ts';

/** A Service Worker container of a page: what the Service Worker posts to the page arrives here. */
const container = () => new EventTarget() as unknown as ServiceWorkerContainer;

/** An in-thread engine named `name`. */
function engine(name: string): IntabEngine {
  const r = referenceEngine();
  return wrapEngineApi(r.engine, r.info, { name });
}

/** Lets every task queued so far run, a few times over: a second answer, had there been one, has come. */
async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

/** The Service Worker pings the page: how many pongs came back, and the models they named. */
async function ping(c: ServiceWorkerContainer): Promise<string[]> {
  const { port1, port2 } = new MessageChannel();
  const pongs: string[] = [];
  port1.onmessage = (e: MessageEvent) => pongs.push((e.data as { model: string }).model);
  c.dispatchEvent(new MessageEvent('message', { data: { type: 'intab:ping' }, ports: [port2] }));
  await settle();
  port1.close();
  return pongs;
}

/** The Service Worker relays one request to the page (pieces pushed, as an older Service Worker asks): every reply. */
async function relay(c: ServiceWorkerContainer, method: string, path: string, body: unknown = ''): Promise<{ heads: number; status: number; json: { data?: { id: string }[]; model?: string; error?: { code: string; message: string } } }> {
  const sw = relayChannel();
  c.dispatchEvent(new MessageEvent('message', { data: { type: 'intab:request', method, path, body: typeof body === 'string' ? body : JSON.stringify(body) }, ports: [sw.port] }));
  await sw.ended;
  await settle();
  sw.close();
  const heads = sw.replies.filter((m) => m.type === 'head');
  return { heads: heads.length, status: heads[0]?.type === 'head' ? heads[0].status : 0, json: JSON.parse(sw.body()) };
}

/** Which engine answered GET /v1/models, after checking it was answered once. */
async function answeredBy(c: ServiceWorkerContainer): Promise<string> {
  const r = await relay(c, 'GET', '/v1/models');
  expect(r.heads).toBe(1);
  return r.json.data![0].id;
}

describe('one dispatcher per container: each relayed request answered once', () => {
  test('two engines served: one pong per ping, one answer per request, from the most recent; stop takes each out', async () => {
    const c = container();
    const stopA = serveOpenAI(engine('model-a'), { container: c });
    const stopB = serveOpenAI(engine('model-b'), { container: c });
    expect(await ping(c)).toEqual(['model-b']);
    expect(await answeredBy(c)).toBe('model-b');
    // A chat request: one answer, by one engine (the body names neither).
    const chat = await relay(c, 'POST', '/v1/chat/completions', { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3, temperature: 0 });
    expect([chat.heads, chat.status, chat.json.model]).toEqual([1, 200, 'model-b']);
    stopB();
    stopB(); // idempotent
    expect(await ping(c)).toEqual(['model-a']);
    expect(await answeredBy(c)).toBe('model-a');
    stopA();
    expect(await ping(c)).toEqual([]);
    // A request pinged just before the last engine stopped: answered all the same, with a 503 the relay passes on.
    const late = await relay(c, 'GET', '/v1/models');
    expect([late.heads, late.status, late.json.error?.code]).toEqual([1, 503, 'no_engine']);
    expect(late.json.error?.message).toMatch(/stopped serving its engine .*: retry/);
  });

  test('the engine the request names answers it: the body\'s model, or GET /v1/models/{id}', async () => {
    const c = container();
    serveOpenAI(engine('model-a'), { container: c });
    serveOpenAI(engine('model-b'), { container: c });
    const chat = (model: string) => relay(c, 'POST', '/v1/completions', { model, prompt: 'x', max_tokens: 2, temperature: 0 });
    expect((await chat('model-a')).json.model).toBe('model-a');
    expect((await chat('model-b')).json.model).toBe('model-b');
    expect((await relay(c, 'GET', '/v1/models/model-a')).json).toMatchObject({ id: 'model-a' });
    // A name nobody serves (the openai client's placeholder): the preferred engine answers, as with one engine.
    expect((await chat('gpt-4o')).json.model).toBe('gpt-4o');
    expect((await chat('gpt-4o')).heads).toBe(1);
    // A body that is not JSON: one engine's core says so.
    const bad = await relay(c, 'POST', '/v1/chat/completions', '{"messages": [');
    expect([bad.heads, bad.status]).toEqual([1, 400]);
  });

  test('serving the same engine twice answers once, with the latest registration\'s onRequest', async () => {
    const c = container();
    const e = engine('model-a');
    const seen: string[] = [];
    const stop1 = serveOpenAI(e, { container: c, onRequest: (ev) => seen.push(`first ${ev}`) });
    serveOpenAI(e, { container: c, onRequest: (ev) => seen.push(`second ${ev}`) });
    expect(await ping(c)).toEqual(['model-a']);
    expect(await answeredBy(c)).toBe('model-a');
    expect(seen).toEqual(['second start', 'second end']);
    stop1();
    expect(await answeredBy(c)).toBe('model-a');
  });
});

describe('an engine attached to the origin\'s shared engine serves by itself', () => {
  afterEach(() => vi.unstubAllGlobals());

  /** A facade over an in-thread engine whose info says where it runs, as createEngine builds it for a shared load. */
  function facade(name: string, mode: 'shared-worker' | 'elected-host' | 'elected-client' | 'own', autoServe: boolean) {
    const r = referenceEngine();
    const guard = new CallGuard();
    const info: ModelInfo = { ...r.info, share: { mode, reason: 'test', attached: true } };
    const e = new EngineFacade({ api: r.engine, guard, inWorker: false, kill: () => {} }, info, name, undefined, autoServe);
    return { engine: e, guard };
  }

  test('on: it answers pings and requests with no serveOpenAI call, until destroy(); not while its backend is dead', async () => {
    const c = container();
    vi.stubGlobal('navigator', { serviceWorker: c });
    const shared = facade('shared', 'shared-worker', true);
    expect(await ping(c)).toEqual(['shared']);
    expect(await answeredBy(c)).toBe('shared');
    await shared.engine.destroy();
    expect(await ping(c)).toEqual([]);

    // A tab's engine by election (no SharedWorker), the host's or a client's, serves too.
    const elected = [facade('host', 'elected-host', true), facade('client', 'elected-client', true)];
    expect(await ping(c)).toEqual(['client']); // one pong per page: the most recent first
    for (const x of elected) await x.engine.destroy();
    expect(await ping(c)).toEqual([]);

    const dead = facade('dead', 'shared-worker', true);
    expect(await ping(c)).toEqual(['dead']);
    dead.guard.close(new Error('the worker ended')); // the session's worker died (or was killed)
    expect(await ping(c)).toEqual([]);
  });

  test('off: serveOpenAI: false, a tab\'s own engine, and an engine of your own do not serve by themselves', async () => {
    const c = container();
    vi.stubGlobal('navigator', { serviceWorker: c });
    facade('opted-out', 'shared-worker', false);
    facade('own', 'own', true);
    engine('wrapped');
    expect(await ping(c)).toEqual([]);
    await expect(createEngine({ model: 'https://example.test/m.gguf', share: 'origin', serveOpenAI: 'yes' as unknown as boolean })).rejects.toThrow(InvalidArgumentError);
    await expect(createEngine({ model: 'https://example.test/m.gguf', serveOpenAI: 1 as unknown as boolean })).rejects.toThrow(/serveOpenAI is true or false .*, not 1/);
  });

  test('with serveOpenAI(engine) too, or beside another engine: one answer, serveOpenAI\'s first', async () => {
    const c = container();
    vi.stubGlobal('navigator', { serviceWorker: c });
    const shared = facade('shared', 'shared-worker', true);
    const seen: string[] = [];
    const stop = serveOpenAI(shared.engine, { onRequest: (ev) => seen.push(ev) });
    expect(await ping(c)).toEqual(['shared']);
    expect(await answeredBy(c)).toBe('shared');
    expect(seen).toEqual(['start', 'end']); // the explicit registration answered: its dashboard saw it
    stop();
    expect(await answeredBy(c)).toBe('shared'); // the engine's own serving goes on
    expect(seen).toEqual(['start', 'end']);
    // A later shared engine does not take the place of an explicit serveOpenAI of another engine.
    serveOpenAI(engine('explicit'), { container: c });
    facade('later-shared', 'shared-worker', true);
    expect(await answeredBy(c)).toBe('explicit');
  });
});
