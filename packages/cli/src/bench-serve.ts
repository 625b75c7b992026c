// `intab bench serve`: a load run against `intab serve` (started here on --model, or an OpenAI-compatible server
// already running at --url). N clients each send streamed text completions back to back for a fixed time (seeded
// random prompt ids, so any model runs it, with or without a tokenizer), asking for vLLM's return_token_ids and the
// usage chunk. Per request: time to first token, the tokens that arrived (the chunks' token_ids) against the usage's
// completion_tokens (a difference is a lost or duplicated token), and the stream's own tok/s. JSON lines: one per
// client, then a summary (requests/s, tokens/s, TTFT p50/p99, per-stream tok/s, errors, lost tokens, and where the
// engine ran: `runtime`, node or chromium, with its backend and the server's start-up time). The streams are read with
// intab's own Server-Sent Events decoder (decodeSSE).
import http2 from 'node:http2';
import { decodeSSE } from 'intab';
import { wholeFlag, type Flags } from './args.ts';
import { percentile, round } from './grammar-stats.ts';
import { serveOptions, startServer, type RunningServer, type ServerStats } from './serve.ts';

/** The run's settings from the flags (checked before anything starts). */
export function benchServeOptions(flags: Flags) {
  if (flags.url === undefined && typeof flags.model !== 'string') throw new Error('intab bench serve needs --model <gguf file | HF folder | URL> (a server is started on it) or --url URL (an OpenAI-compatible server)');
  if (flags.url !== undefined && typeof flags.url !== 'string') throw new Error('--url needs the server, e.g. --url http://127.0.0.1:8080');
  const transport = flags.transport ?? 'http1';
  if (transport !== 'http1' && transport !== 'h2') throw new Error('--transport takes http1 (a connection per client) or h2 (every client a stream of one HTTP/2 connection)');
  return {
    url: flags.url as string | undefined,
    apiKey: typeof flags['api-key'] === 'string' ? flags['api-key'] : undefined,
    clients: wholeFlag(flags, 'clients', 8, 1, 1024),
    seconds: wholeFlag(flags, 'seconds', 20, 1, 3600),
    maxTokens: wholeFlag(flags, 'max-tokens', 64, 1, 100_000),
    promptTokens: wholeFlag(flags, 'prompt-tokens', 8, 1, 100_000),
    seed: wholeFlag(flags, 'seed', 1, 0, 2 ** 32 - 1),
    transport: transport as 'http1' | 'h2',
  };
}

/** One streamed request's figures. */
interface Outcome {
  ok: boolean;
  ttftMs: number | null;
  tokens: number;
  usageTokens: number | null;
  tokS: number | null;
  error?: string;
}

/** The fields of a streamed text_completion (or an error event) that the bench reads. */
interface StreamEvent {
  error?: { message: string };
  choices?: { token_ids?: number[] }[];
  usage?: { completion_tokens: number } | null;
}

/**
 * Reads an SSE body (its pieces, text or bytes) into the request's figures; `t0` is when the request was sent. The
 * body is read to its end, as a client that keeps its connection does; an error event ends it (`return()`).
 */
async function readStream(body: AsyncIterator<string | Uint8Array>, t0: number): Promise<Outcome> {
  let tokens = 0;
  let usageTokens: number | null = null;
  let first = 0;
  let firstTokens = 0;
  let last = 0;
  // decodeSSE stops at `data: [DONE]` without reading on, or at the body's end: the body ran out only without [DONE].
  let ranOut = false;
  // No return(): decodeSSE's early stop at [DONE] must not cancel the body (the rest is drained below).
  const pieces: AsyncIterable<string | Uint8Array> = {
    [Symbol.asyncIterator]: () => ({
      next: async () => {
        const r = await body.next();
        if (r.done) ranOut = true;
        return r;
      },
    }),
  };
  try {
    for await (const m of decodeSSE<StreamEvent>(pieces)) {
      if (m.error) {
        await body.return?.();
        return { ok: false, ttftMs: null, tokens, usageTokens, tokS: null, error: m.error.message };
      }
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
  } catch (err) {
    await body.return?.(); // data that is not JSON (SseFormatError): the request failed; its body is not read on
    throw err;
  }
  const done = !ranOut;
  while (!ranOut) ranOut = Boolean((await body.next()).done);
  return {
    ok: done,
    ttftMs: first ? first - t0 : null,
    tokens,
    usageTokens,
    tokS: last > first ? ((tokens - firstTokens) / (last - first)) * 1000 : null,
    ...(done ? {} : { error: 'the stream ended without [DONE]' }),
  };
}

export async function benchServe(flags: Flags): Promise<number> {
  const o = benchServeOptions(flags);
  const server: RunningServer | undefined = o.url ? undefined : await startServer({ ...serveOptions({ ...flags, port: '0' }), log: () => {} });
  const base = (o.url ?? server!.url).replace(/\/+$/, '');
  const headers = { 'content-type': 'application/json', ...(o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {}) };
  try {
    const models = (await (await fetch(`${base}/v1/models`, { headers })).json()) as { data?: { id?: string }[] };
    const model = models.data?.[0]?.id ?? 'model';
    const vocab = server?.info.vocab ?? 256;
    const bos = 1;
    let seed = o.seed >>> 0;
    const rand = () => ((seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0) / 2 ** 32);
    const prompt = () => [bos, ...Array.from({ length: o.promptTokens - 1 }, () => 3 + Math.floor(rand() * (vocab - 3)))];
    const session = o.transport === 'h2' ? http2.connect(base) : undefined;
    session?.on('error', () => {});

    const send = async (ids: number[]): Promise<Outcome> => {
      const body = JSON.stringify({ model, prompt: ids, max_tokens: o.maxTokens, temperature: 0, stream: true, return_token_ids: true, stream_options: { include_usage: true } });
      const t0 = performance.now();
      try {
        if (!session) {
          const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers, body });
          if (!r.ok || !r.body) return { ok: false, ttftMs: null, tokens: 0, usageTokens: null, tokS: null, error: `HTTP ${r.status}: ${await r.text()}` };
          const reader = r.body.getReader();
          const pieces: AsyncIterator<Uint8Array> = {
            next: () => reader.read() as Promise<IteratorResult<Uint8Array>>,
            return: async () => (await reader.cancel(), { done: true, value: undefined }),
          };
          return await readStream(pieces, t0);
        }
        const stream = session.request({ ':method': 'POST', ':path': '/v1/completions', ...headers });
        stream.setEncoding('utf8');
        stream.end(body);
        const status = await new Promise<number>((resolve, reject) => {
          stream.once('response', (h) => resolve(Number(h[':status'])));
          stream.once('error', reject);
        });
        if (status !== 200) return { ok: false, ttftMs: null, tokens: 0, usageTokens: null, tokS: null, error: `HTTP ${status}` };
        return await readStream((stream as AsyncIterable<string>)[Symbol.asyncIterator](), t0);
      } catch (err) {
        return { ok: false, ttftMs: null, tokens: 0, usageTokens: null, tokS: null, error: (err as Error).message };
      }
    };

    const start = performance.now();
    const until = start + o.seconds * 1000;
    const perClient: Outcome[][] = await Promise.all(
      Array.from({ length: o.clients }, async () => {
        const outcomes: Outcome[] = [];
        while (performance.now() < until) outcomes.push(await send(prompt()));
        return outcomes;
      }),
    );
    const wallS = (performance.now() - start) / 1000;
    session?.close();

    const sorted = (xs: number[]) => Float64Array.from(xs).sort();
    const p = (xs: number[], q: number) => (xs.length ? round(percentile(sorted(xs), q)) : null);
    const lost = (list: Outcome[]) => list.reduce((n, r) => n + (r.ok && r.usageTokens !== null ? Math.abs(r.usageTokens - r.tokens) : 0), 0);
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
    // The server's own figures: ours, or an intab serve at --url (another OpenAI-compatible server has no /v1/stats).
    const stats = server ? await server.stats() : await fetch(`${base}/v1/stats`, { headers }).then((r) => (r.ok ? (r.json() as Promise<ServerStats>) : undefined), () => undefined);
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
        runtime: stats?.runtime ?? null,
        backend: stats?.backend ?? null,
        ...(server ? { adapter: server.info.adapter, ready_ms: server.readyMs, server_totals: stats?.totals } : { url: base }),
      })}\n`,
    );
    return errors.length || lost(all) ? 1 : 0;
  } finally {
    await server?.close({ graceMs: 0 });
  }
}
