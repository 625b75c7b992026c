// `intab serve` as its command runs it (a child process: flags, the "listening" line, SIGTERM), once per runtime, over
// TLS with a self-signed certificate made here with the openssl command: HTTP/2 (ALPN h2) with several streams on one
// connection, HTTP/1.1 (ALPN http/1.1) and wss on the same port; 4 concurrent greedy streams equal to each run alone;
// keep-alive comments on a stream that waits in the engine (a 1 MiB KV cache, its pages held by a reader that
// paused); then SIGTERM: the running stream finishes, the process exits 0. --backend onnx-wasm runs the model on ORT on
// the CPU: onnxruntime-node's CPU execution provider on --runtime node, onnxruntime-web's wasm on --runtime chromium
// (serve.test.ts runs the other backends: onnxruntime-node by `auto`, intab's kernels in Chromium).
// INTAB_SERVE_RUNTIME=node (or chromium) runs one runtime only.
import { spawnSync } from 'node:child_process';
import https from 'node:https';
import http2 from 'node:http2';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ServerStats } from './serve.ts';
import { startServeProcess, type ServeProcess } from './serve-process.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
const MODEL_DIR = join(SHARED, 'models', 'stories260K');
const golden = JSON.parse(readFileSync(join(MODEL_DIR, 'golden.json'), 'utf8')).cases as { prompt: number[]; greedy: number[] }[];
const KEY = 'sk-tls';
const hasOpenssl = spawnSync('openssl', ['version']).status === 0;
const RUNTIMES = (['node', 'chromium'] as const).filter((r) => !process.env.INTAB_SERVE_RUNTIME || process.env.INTAB_SERVE_RUNTIME === r);

let dir: string;
let ca: Buffer;
let server: ServeProcess;
let url: string;
let wsUrl: string;

const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

/** One HTTP/1.1-over-TLS request; the body as text. */
function h1(path: string, body?: unknown, onData?: (raw: string) => void): Promise<{ status: number; version: string; raw: string }> {
  return new Promise((resolveRequest, reject) => {
    const req = https.request(`${url}${path}`, { method: body ? 'POST' : 'GET', headers, ca, agent: false }, (res) => {
      let raw = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        raw += d;
        onData?.(raw);
      });
      res.on('end', () => resolveRequest({ status: res.statusCode ?? 0, version: res.httpVersion, raw }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

const stats = async (): Promise<ServerStats> => JSON.parse((await h1('/v1/stats')).raw);

async function waitFor(what: string, check: (s: ServerStats) => boolean): Promise<ServerStats> {
  const until = Date.now() + 20_000;
  for (;;) {
    const s = await stats();
    if (check(s)) return s;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const dataIds = (raw: string) =>
  raw
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .flatMap((l) => JSON.parse(l.slice(6)).choices?.[0]?.token_ids ?? []);

for (const runtime of RUNTIMES) describe.skipIf(!hasOpenssl)(`intab serve --runtime ${runtime} --cert/--key (the command, over TLS; onnx-wasm)`, { timeout: 60_000 }, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'intab-serve-tls-'));
    const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1']);
    if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr}`);
    ca = readFileSync(join(dir, 'cert.pem'));
    // prettier-ignore
    server = await startServeProcess(['--model', join(MODEL_DIR, 'stories260K-vocab-ud.gguf'), '--runtime', runtime, '--port', '0', '--cert', join(dir, 'cert.pem'), '--key', join(dir, 'key.pem'), '--backend', 'onnx-wasm', '--kv-mib', '1', '--keep-alive-ms', '50', '--api-key', KEY, '--chat-template', 'chatml', '--grace-ms', '30000']);
    expect(server.line).toMatchObject({ serve: 'listening', model: 'stories260K-vocab-ud', runtime, backend: 'onnx-wasm', api_keys: 1 });
    expect(server.line.adapter).toMatch(runtime === 'node' ? /^onnxruntime-node [\d.]+ CPU EP/ : /^onnxruntime-web wasm/);
    // From the process's start to listening: the CLI, the model's load and warm-up (and Chromium's launch).
    expect(server.line.ready_ms).toBeGreaterThan(0);
    ({ url, wsUrl } = server);
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  }, 180_000);

  afterAll(() => {
    if (server && server.proc.exitCode === null) server.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('HTTPS: HTTP/2 (several streams on one connection), HTTP/1.1 and wss on one port', async () => {
    const session = http2.connect(url, { ca });
    const request = (path: string, body?: unknown) =>
      new Promise<{ status: number; raw: string }>((resolveRequest, reject) => {
        const s = session.request({ ':method': body ? 'POST' : 'GET', ':path': path, ...headers });
        let status = 0;
        let raw = '';
        s.on('response', (h) => (status = Number(h[':status'])));
        s.setEncoding('utf8');
        s.on('data', (d: string) => (raw += d));
        s.on('end', () => resolveRequest({ status, raw }));
        s.on('error', reject);
        s.end(body ? JSON.stringify(body) : undefined);
      });
    try {
      const [a, b, c] = await Promise.all([
        request('/v1/completions', { prompt: golden[1].prompt, max_tokens: 24, temperature: 0, stream: true, return_token_ids: true }),
        request('/v1/chat/completions', { messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, temperature: 0 }),
        request('/v1/models'),
      ]);
      expect(session.alpnProtocol).toBe('h2');
      expect([a.status, b.status, c.status]).toEqual([200, 200, 200]);
      expect(dataIds(a.raw)).toEqual(golden[1].greedy.slice(0, 24));
      expect(JSON.parse(b.raw)).toMatchObject({ object: 'chat.completion', usage: { completion_tokens: 8 } });
      expect(JSON.parse(c.raw).data[0].id).toBe('stories260K-vocab-ud');
    } finally {
      session.close();
    }
    const one = await h1('/v1/completions', { prompt: golden[0].prompt, max_tokens: 16, temperature: 0, return_token_ids: true });
    expect([one.status, one.version]).toEqual([200, '1.1']);
    expect(JSON.parse(one.raw).choices[0].token_ids).toEqual(golden[0].greedy.slice(0, 16));

    // A browser cannot set headers on a WebSocket: the key rides in a subprotocol.
    const ws = new WebSocket(wsUrl, ['intab-realtime-text', `openai-insecure-api-key.${KEY}`], { ca });
    const frames: Record<string, any>[] = [];
    await new Promise<void>((done, reject) => {
      ws.on('open', () => ws.send(JSON.stringify({ type: 'request', id: 1, endpoint: 'completions', body: { prompt: golden[1].prompt, max_tokens: 12, temperature: 0, return_token_ids: true } })));
      ws.on('message', (d) => {
        const m = JSON.parse(String(d));
        frames.push(m);
        if (m.type !== 'chunk') done();
      });
      ws.on('error', reject);
    });
    expect(ws.protocol).toBe('intab-realtime-text');
    expect(frames.at(-1)).toMatchObject({ type: 'done', id: 1, usage: { completion_tokens: 12 } });
    expect(frames.flatMap((f) => f.data?.choices[0].token_ids ?? [])).toEqual(golden[1].greedy.slice(0, 12));
    ws.close();
  });

  test('4 concurrent greedy streams: each gets the ids it gets alone (decode steps batched with padding)', async () => {
    const prompts = [golden[0].prompt, golden[1].prompt, [1, 300], [1, 400, 401, 402, 403, 404, 405]];
    const body = (prompt: number[]) => ({ prompt, max_tokens: 32, temperature: 0, stream: true, return_token_ids: true });
    const solo: number[][] = [];
    for (const p of prompts) solo.push(dataIds((await h1('/v1/completions', body(p))).raw));
    expect(solo[0]).toEqual(golden[0].greedy.slice(0, 32));
    expect(solo[1]).toEqual(golden[1].greedy.slice(0, 32));
    const together = await Promise.all(prompts.map(async (p) => dataIds((await h1('/v1/completions', body(p))).raw)));
    together.forEach((ids, i) => expect(ids, `stream ${i}`).toEqual(solo[i]));
    await waitFor('the streams to end', (s) => s.requests.length === 0 && s.engine!.availablePages === s.engine!.totalPages);
  });

  test('an SSE stream that waits in the engine (its KV pages held by a paused reader) gets keep-alive comments, then its answer', async () => {
    // A: holds 31 of the 51 pages (482 tokens reserved), and stops reading: paused in the engine, pages kept.
    const session = http2.connect(url, { ca, settings: { initialWindowSize: 1024 } });
    session.on('error', () => {});
    const a = session.request({ ':method': 'POST', ':path': '/v1/completions', ...headers });
    a.on('error', () => {});
    a.end(JSON.stringify({ prompt: [1, 300], max_tokens: 480, temperature: 0, stream: true, logprobs: 20 }));
    await waitFor('the paused reader to hold its pages', (s) => s.engine!.paused === 1);
    // B: needs 26 pages, so it waits, its headers sent: comments keep it alive until A lets go.
    let sawWaiting = false;
    const b = h1('/v1/completions', { prompt: golden[1].prompt, max_tokens: 400, temperature: 0, stream: true, return_token_ids: true }, (raw) => {
      if (!sawWaiting && raw.includes(': keep-alive')) {
        sawWaiting = true;
        void stats().then((s) => {
          expect(s.engine!.waiting).toBe(1);
          session.destroy(); // A goes away: its pages free, B is admitted
        });
      }
    });
    const { raw } = await b;
    expect(sawWaiting).toBe(true);
    expect(raw.indexOf(': keep-alive')).toBeLessThan(raw.indexOf('data: {'));
    expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(dataIds(raw).slice(0, golden[1].greedy.length)).toEqual(golden[1].greedy);
    await waitFor('both to be over', (s) => s.requests.length === 0 && s.engine!.availablePages === s.engine!.totalPages);
  });

  test('SIGTERM: the server drains (a running stream finishes) and the process exits 0', async () => {
    let signalled = false;
    const running = h1('/v1/completions', { prompt: golden[1].prompt, max_tokens: 48, temperature: 0, stream: true, return_token_ids: true }, () => {
      if (signalled) return;
      signalled = true;
      server.proc.kill('SIGTERM');
    });
    const { raw } = await running;
    expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(dataIds(raw)).toEqual(golden[1].greedy.slice(0, 48));
    expect(await server.exited).toBe(0);
    expect(server.stderr()).toMatch(/SIGTERM: draining/);
  });
});
