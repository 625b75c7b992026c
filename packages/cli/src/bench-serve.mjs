// @ts-check
// `intab bench serve`: a load run against `intab serve` (started here on --model, or an OpenAI-compatible server
// already running at --url). N clients each send streamed text completions back to back for a fixed time (seeded
// random prompt ids, so any model runs it, with or without a tokenizer), asking for vLLM's return_token_ids and the
// usage chunk. Per request: time to first token, the tokens that arrived (the chunks' token_ids) against the usage's
// completion_tokens (a difference is a lost or duplicated token), and the stream's own tok/s. JSON lines: one per
// client, then a summary (requests/s, tokens/s, TTFT p50/p99, per-stream tok/s, errors, lost tokens).
import http2 from 'node:http2';
import { wholeFlag } from './args.mjs';
import { percentile, round } from './grammar-stats.mjs';
import { serveOptions, startServer } from './serve.mjs';

/**
 * @param {Record<string, string | boolean>} flags
 */
export function benchServeOptions(flags) {
  if (flags.url === undefined && typeof flags.model !== 'string') throw new Error('intab bench serve needs --model <gguf file | HF folder | URL> (a server is started on it) or --url URL (an OpenAI-compatible server)');
  if (flags.url !== undefined && typeof flags.url !== 'string') throw new Error('--url needs the server, e.g. --url http://127.0.0.1:8080');
  const transport = flags.transport ?? 'http1';
  if (transport !== 'http1' && transport !== 'h2') throw new Error('--transport takes http1 (a connection per client) or h2 (every client a stream of one HTTP/2 connection)');
  return {
    url: /** @type {string | undefined} */ (flags.url),
    apiKey: typeof flags['api-key'] === 'string' ? flags['api-key'] : undefined,
    clients: wholeFlag(flags, 'clients', 8, 1, 1024),
    seconds: wholeFlag(flags, 'seconds', 20, 1, 3600),
    maxTokens: wholeFlag(flags, 'max-tokens', 64, 1, 100_000),
    promptTokens: wholeFlag(flags, 'prompt-tokens', 8, 1, 100_000),
    seed: wholeFlag(flags, 'seed', 1, 0, 2 ** 32 - 1),
    transport,
  };
}

/**
 * One streamed request's figures.
 * @typedef {{ ok: boolean, ttftMs: number | null, tokens: number, usageTokens: number | null, tokS: number | null, error?: string }} Outcome
 */

/**
 * Reads an SSE body (chunks of text) into the request's figures.
 * @param {AsyncIterable<string>} body
 * @param {number} t0 when the request was sent
 * @returns {Promise<Outcome>}
 */
async function readStream(body, t0) {
  let buffer = '';
  let tokens = 0;
  /** @type {number | null} */
  let usageTokens = null;
  let first = 0;
  let firstTokens = 0;
  let last = 0;
  let done = false;
  for await (const text of body) {
    buffer += text;
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (!event.startsWith('data: ')) continue; // keep-alive comments
      const data = event.slice(6);
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      const m = JSON.parse(data);
      if (m.error) return { ok: false, ttftMs: null, tokens, usageTokens, tokS: null, error: m.error.message };
      const ids = m.choices?.[0]?.token_ids;
      if (ids?.length) {
        const now = performance.now();
        if (!first) {
          first = now;
          firstTokens = ids.length;
        }
        last = now;
        tokens += ids.length;
      }
      if (m.usage) usageTokens = m.usage.completion_tokens;
    }
  }
  return {
    ok: done,
    ttftMs: first ? first - t0 : null,
    tokens,
    usageTokens,
    tokS: last > first ? ((tokens - firstTokens) / (last - first)) * 1000 : null,
    ...(done ? {} : { error: 'the stream ended without [DONE]' }),
  };
}

/**
 * @param {Record<string, string | boolean>} flags
 */
export async function benchServe(flags) {
  const o = benchServeOptions(flags);
  const server = o.url ? undefined : await startServer({ ...serveOptions({ ...flags, port: '0' }), log: () => {} });
  const base = (o.url ?? /** @type {NonNullable<typeof server>} */ (server).url).replace(/\/+$/, '');
  const headers = { 'content-type': 'application/json', ...(o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {}) };
  try {
    const models = await (await fetch(`${base}/v1/models`, { headers })).json();
    const model = models.data?.[0]?.id ?? 'model';
    const vocab = server?.info.vocab ?? 256;
    const bos = 1;
    let seed = o.seed >>> 0;
    const rand = () => ((seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0) / 2 ** 32);
    const prompt = () => [bos, ...Array.from({ length: o.promptTokens - 1 }, () => 3 + Math.floor(rand() * (vocab - 3)))];
    const session = o.transport === 'h2' ? http2.connect(base) : undefined;
    session?.on('error', () => {});

    /**
     * @param {number[]} ids
     * @returns {Promise<Outcome>}
     */
    const send = async (ids) => {
      const body = JSON.stringify({ model, prompt: ids, max_tokens: o.maxTokens, temperature: 0, stream: true, return_token_ids: true, stream_options: { include_usage: true } });
      const t0 = performance.now();
      try {
        if (!session) {
          const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers, body });
          if (!r.ok || !r.body) return { ok: false, ttftMs: null, tokens: 0, usageTokens: null, tokS: null, error: `HTTP ${r.status}: ${await r.text()}` };
          return await readStream(r.body.pipeThrough(new TextDecoderStream()), t0);
        }
        const stream = session.request({ ':method': 'POST', ':path': '/v1/completions', ...headers });
        stream.setEncoding('utf8');
        stream.end(body);
        const status = await new Promise((resolve, reject) => {
          stream.once('response', (h) => resolve(Number(h[':status'])));
          stream.once('error', reject);
        });
        if (status !== 200) return { ok: false, ttftMs: null, tokens: 0, usageTokens: null, tokS: null, error: `HTTP ${status}` };
        return await readStream(/** @type {AsyncIterable<string>} */ (stream), t0);
      } catch (err) {
        return { ok: false, ttftMs: null, tokens: 0, usageTokens: null, tokS: null, error: /** @type {Error} */ (err).message };
      }
    };

    const start = performance.now();
    const until = start + o.seconds * 1000;
    /** @type {Outcome[][]} */
    const perClient = await Promise.all(
      Array.from({ length: o.clients }, async () => {
        /** @type {Outcome[]} */
        const outcomes = [];
        while (performance.now() < until) outcomes.push(await send(prompt()));
        return outcomes;
      }),
    );
    const wallS = (performance.now() - start) / 1000;
    session?.close();

    const sorted = (/** @type {number[]} */ xs) => Float64Array.from(xs).sort();
    const p = (/** @type {number[]} */ xs, /** @type {number} */ q) => (xs.length ? round(percentile(sorted(xs), q)) : null);
    /** @param {Outcome[]} list */
    const lost = (list) => list.reduce((n, r) => n + (r.ok && r.usageTokens !== null ? Math.abs(r.usageTokens - r.tokens) : 0), 0);
    perClient.forEach((list, client) => {
      const ok = list.filter((r) => r.ok);
      process.stdout.write(
        `${JSON.stringify({
          bench: 'serve',
          client,
          requests: ok.length,
          completion_tokens: ok.reduce((n, r) => n + r.tokens, 0),
          tok_s_per_stream_p50: p(ok.flatMap((r) => (r.tokS === null ? [] : [r.tokS])), 0.5),
          ttft_ms_p50: p(ok.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs])), 0.5),
          errors: list.length - ok.length,
          lost_tokens: lost(list),
        })}\n`,
      );
    });
    const all = perClient.flat();
    const ok = all.filter((r) => r.ok);
    const tokens = ok.reduce((n, r) => n + r.tokens, 0);
    const tokS = ok.flatMap((r) => (r.tokS === null ? [] : [r.tokS]));
    const errors = all.filter((r) => !r.ok);
    const stats = server ? await server.stats() : undefined;
    process.stdout.write(
      `${JSON.stringify({
        bench: 'serve',
        summary: true,
        clients: o.clients,
        seconds: round(wallS),
        transport: o.transport,
        prompt_tokens: o.promptTokens,
        max_tokens: o.maxTokens,
        requests: ok.length,
        requests_per_s: round(ok.length / wallS),
        completion_tokens: tokens,
        tokens_per_s: round(tokens / wallS),
        ttft_ms_p50: p(ok.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs])), 0.5),
        ttft_ms_p99: p(ok.flatMap((r) => (r.ttftMs === null ? [] : [r.ttftMs])), 0.99),
        per_stream_tok_s_p50: p(tokS, 0.5),
        per_stream_tok_s_min: tokS.length ? round(Math.min(...tokS)) : null,
        errors: errors.length,
        ...(errors.length ? { first_error: errors[0].error } : {}),
        lost_tokens: lost(all),
        model,
        ...(server ? { backend: server.info.backend?.name, adapter: server.info.adapter, server_totals: stats?.totals } : { url: base }),
      })}\n`,
    );
    return errors.length || lost(all) ? 1 : 0;
  } finally {
    await server?.close({ graceMs: 0 });
  }
}
