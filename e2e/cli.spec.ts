// The CLI as a user runs it: `intab generate` (on each --backend), `intab bench decode` (and --compare against a git
// ref), `intab bench compare` (intab's backends against the peers), `intab export-onnx`, `intab bench chat` and
// `intab bench store` on stories260K in headless Chromium (WebGPU), checked against golden.json and for the figures
// they promise to print.
import { expect, test } from '@playwright/test';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
const MODEL = join(SHARED, 'models', 'stories260K');
const run = promisify(execFile);
/** Tokens one pull can bring at most: the engine's per-sequence queue (maxQueuedChunks, 8 by default) of one-token chunks. */
const ABORT_QUEUE_BOUND = 8;

async function intab(...args: string[]): Promise<Record<string, unknown>[]> {
  const { stdout } = await run('node', [join(ROOT, 'packages/cli/bin/intab.mjs'), ...args, '--json'], { cwd: ROOT, timeout: 180_000 });
  return stdout.trim().split('\n').map((l) => JSON.parse(l));
}

test('intab generate: golden greedy ids from the GGUF, then a text prompt through its tokenizer', async () => {
  const golden = JSON.parse(readFileSync(join(MODEL, 'golden.json'), 'utf8')).cases[1];
  const lines = await intab('generate', '--model', join(MODEL, 'stories260K.gguf'), '--prompt-ids', golden.prompt.join(','), '--max-tokens', '24', '--temperature', '0');
  const done = lines.at(-1)!;
  expect(done.done).toBe(true);
  expect(lines.slice(0, -1).map((l) => l.id)).toEqual(golden.greedy.slice(0, 24));
  expect(done.ids).toEqual(golden.greedy.slice(0, 24));
  expect(done.prompt_tokens).toBe(golden.prompt.length);
  for (const k of ['ttft_ms', 'prefill_tok_s', 'decode_tok_s']) expect(done[k]).toBeGreaterThan(0);
  expect(String(done.adapter)).not.toBe('');
  expect(done.speculative).toBeUndefined(); // no speculation unless asked

  // The same prompt as text: the vocabulary GGUF's tokenizer maps <tNNN> pieces to ids, with BOS.
  const text = golden.prompt.slice(1).map((id: number) => `<t${id}>`).join('');
  const fromText = await intab('generate', '--model', join(MODEL, 'stories260K-vocab-ud.gguf'), '--prompt', text, '--max-tokens', '6', '--temperature', '0');
  const last = fromText.at(-1)!;
  expect(last.ids).toEqual(golden.greedy.slice(0, 6));
  expect(fromText[0].text).toBe(`<t${golden.greedy[0]}>`);
});

test('intab generate --backend onnx-wasm|onnx-webgpu: the same golden ids on onnxruntime-web, the backend named; bad combinations refused', async () => {
  const golden = JSON.parse(readFileSync(join(MODEL, 'golden.json'), 'utf8')).cases[1];
  for (const backend of ['onnx-wasm', 'onnx-webgpu']) {
    const lines = await intab('generate', '--backend', backend, '--model', join(MODEL, 'hf'), '--prompt-ids', golden.prompt.join(','), '--max-tokens', '24', '--temperature', '0');
    const done = lines.at(-1)!;
    expect(done.ids, backend).toEqual(golden.greedy.slice(0, 24));
    expect(done.backend).toBe(backend);
    expect(String(done.adapter)).toContain('onnxruntime-web');
    expect(done.dispatches_per_token).toBeUndefined(); // intab's kernels' figure: none to count on ORT
  }
  await expect(intab('generate', '--backend', 'onnx-wasm', '--quantize', 'q8_0', '--model', join(MODEL, 'hf'), '--prompt-ids', '1')).rejects.toThrow(/--quantize re-quantizes/);
  await expect(intab('generate', '--backend', 'cuda', '--model', join(MODEL, 'hf'), '--prompt-ids', '1')).rejects.toThrow(/--backend takes webgpu, auto, onnx-wasm, onnx-webgpu/);
});

test('intab bench compare: intab on its three backends, the peers and llama.cpp natively on the same weights, one line per system, all with the same greedy ids', async () => {
  // (32 prompt tokens: after these seeded 8, stories260K's two likeliest next tokens differ by 0.0015, which native llama.cpp's
  // rounding flips)
  const lines = await intab('bench', 'compare', '--model', join(MODEL, 'stories260K-vocab-ud.gguf'), '--rounds', '1', '--max-tokens', '12', '--prompt-tokens', '32');
  const runs = lines.filter((l) => l.type === 'compare-run');
  const systems = lines.filter((l) => l.bench === 'compare' && !l.summary && l.type === undefined);
  const summary = lines.at(-1)!;
  const names = ['intab/webgpu', 'intab/onnx-wasm', 'intab/onnx-webgpu', 'transformers.js/wasm', 'transformers.js/webgpu', 'wllama/wasm', 'llama.cpp/native'];
  expect(systems.map((l) => `${l.system}/${l.backend}`)).toEqual(names);
  expect(runs).toHaveLength(names.length);
  for (const l of systems) {
    expect(l.error, `${l.system}/${l.backend}`).toBeUndefined();
    for (const k of ['decode_tok_s', 'prefill_tok_s', 'ttft_ms']) expect(l[k], `${l.system}/${l.backend} ${k}`).toBeGreaterThan(0);
    expect(l.ids_equal, `${l.system}/${l.backend}`).toBe(true);
    expect(l.generated_tokens).toBe(12);
    if (l.system === 'llama.cpp') expect(l).toMatchObject({ threads: 1, decode_vs_intab_onnx_wasm: expect.any(Number) });
    else if (l.system !== 'intab') expect(l.decode_vs_intab_same_backend).toBeGreaterThan(0);
    if (l.backend !== 'webgpu' || l.system !== 'intab') expect(l.decode_vs_intab_webgpu).toBeGreaterThan(0);
  }
  // 'auto' takes onnx-wasm on a software adapter (SwiftShader here), webgpu on a hardware one.
  expect(summary).toMatchObject({ bench: 'compare', summary: true });
  expect(String(summary.auto_reason)).toContain(summary.auto_backend === 'onnx-wasm' ? 'software' : 'hardware');
  expect(typeof summary.auto_is_fastest).toBe('boolean');
  expect(names).toContain(summary.fastest_system);
  await expect(intab('bench', 'compare', '--model', join(MODEL, 'hf'), '--systems', 'wllama/wasm')).rejects.toThrow(/wllama runs GGUF files/);
});

test('intab export-onnx writes an ONNX folder that generate --backend onnx-wasm runs with the golden ids', async () => {
  const golden = JSON.parse(readFileSync(join(MODEL, 'golden.json'), 'utf8')).cases[1];
  const out = join(mkdtempSync(join(tmpdir(), 'intab-export-')), 'stories-onnx');
  await run('node', [join(ROOT, 'packages/cli/bin/intab.mjs'), 'export-onnx', '--model', join(MODEL, 'stories260K.gguf'), '--out', out], { cwd: ROOT, timeout: 120_000 });
  for (const f of ['config.json', 'onnx/model.onnx', 'onnx/model.onnx_data']) expect(existsSync(join(out, f)), f).toBe(true);
  const lines = await intab('generate', '--backend', 'onnx-wasm', '--model', out, '--prompt-ids', golden.prompt.join(','), '--max-tokens', '16', '--temperature', '0');
  expect(lines.at(-1)!.ids).toEqual(golden.greedy.slice(0, 16));
  expect(String(lines.at(-1)!.adapter)).toContain('onnx/model.onnx');
  await expect(run('node', [join(ROOT, 'packages/cli/bin/intab.mjs'), 'export-onnx', '--model', join(MODEL, 'stories260K.gguf'), '--out', out], { cwd: ROOT })).rejects.toThrow(/not empty/);
});

test('intab bench decode prints prefill and decode speeds and bytes per token', async () => {
  const [line] = await intab('bench', 'decode', '--model', join(MODEL, 'hf'), '--prompt-tokens', '16', '--max-tokens', '8');
  expect(line.bench).toBe('decode');
  for (const k of ['prefill_tok_s', 'decode_tok_s', 'weight_bytes_per_token', 'dispatches_per_token', 'dispatches_per_step']) expect(line[k]).toBeGreaterThan(0);
  expect(line.bind_groups_per_step).toBe(0); // every bind group is built at warm-up
  expect(line.backend).toBe('webgpu'); // the CLI measures intab's kernels unless --backend says otherwise
});

test('intab bench decode --compare HEAD: both trees run alternately, the medians compared, the worktree removed', async () => {
  const lines = await intab('bench', 'decode', '--model', join(MODEL, 'stories260K.gguf'), '--prompt-tokens', '8', '--max-tokens', '8', '--compare', 'HEAD', '--rounds', '1');
  const runs = lines.filter((l) => l.type === 'compare-run');
  const summary = lines.at(-1)!;
  expect(lines).toHaveLength(3);
  expect(runs.map((r) => [r.tree, r.round, r.ref])).toEqual([['current', 0, 'HEAD'], ['ref', 0, 'HEAD']]);
  for (const r of runs) for (const k of ['tok_s', 'prefill_tok_s', 'ttft_ms']) expect(r[k], `${r.tree} ${k}`).toBeGreaterThan(0);
  expect(summary).toMatchObject({ type: 'compare', bench: 'decode', ref: 'HEAD', rounds: 1, tok_s_field: 'decode_tok_s', current_tok_s: runs[0].tok_s, ref_tok_s: runs[1].tok_s });
  expect(summary.ref_commit).toMatch(/^[0-9a-f]{40}$/);
  expect(runs[1].commit).toBe(summary.ref_commit);
  for (const k of ['ratio', 'current_prefill_tok_s', 'ref_prefill_tok_s', 'prefill_ratio']) expect(summary[k], k).toBeGreaterThan(0);
  expect(summary.ratio).toBeCloseTo((summary.current_tok_s as number) / (summary.ref_tok_s as number), 3);
  expect(summary.prefill_ratio).toBeCloseTo((summary.current_prefill_tok_s as number) / (summary.ref_prefill_tok_s as number), 3);
  // the worktree is gone, from the disk and from git's list
  const worktree = String(summary.worktree);
  expect(worktree).toContain('intab-compare-');
  expect(existsSync(worktree)).toBe(false);
  const { stdout } = await run('git', ['worktree', 'list', '--porcelain'], { cwd: ROOT });
  expect(stdout).not.toContain(worktree);
});

test('intab generate fails with a typed, actionable message on a missing prompt', async () => {
  await expect(intab('generate', '--model', join(MODEL, 'stories260K.gguf'))).rejects.toMatchObject({
    stderr: expect.stringMatching(/--prompt-ids, --prompt or --chat/),
  });
});

test('intab generate --concurrency 3: three streams through one engine, each with the single-stream greedy ids', async () => {
  const golden = JSON.parse(readFileSync(join(MODEL, 'golden.json'), 'utf8')).cases[1];
  const model = join(MODEL, 'stories260K.gguf');
  const args = ['--model', model, '--prompt-ids', golden.prompt.join(','), '--max-tokens', '24', '--temperature', '0'];
  // The single-stream greedy ids are the golden ones (the first test runs that stream): no second Chromium for them.
  const single = { ids: golden.greedy.slice(0, 24) };

  const lines = await intab('generate', ...args, '--concurrency', '3');
  const tokens = lines.filter((l) => l.id !== undefined);
  const done = lines.filter((l) => l.done === true);
  const summary = lines.at(-1)!;
  expect(done.map((l) => l.stream)).toEqual([0, 1, 2]);
  for (const [i, d] of done.entries()) {
    expect(d.ids).toEqual(single.ids);
    expect(d.finish_reason).toBe('length');
    // every token line names its stream, and each stream's lines spell its ids in order
    expect(tokens.filter((t) => t.stream === i).map((t) => t.id)).toEqual(single.ids);
    for (const k of ['ttft_ms', 'prefill_tok_s', 'decode_tok_s']) expect(d[k]).toBeGreaterThan(0);
  }
  expect(tokens).toHaveLength(3 * 24);
  expect(summary).toMatchObject({ summary: true, streams: 3, identical_ids: true, generated_tokens: 72, finish_reasons: ['length', 'length', 'length'] });
  expect(summary.aggregate_decode_tok_s).toBeGreaterThan(0);
});

test('intab generate --abort-after-tokens: each stream ends with finish_reason abort at the tokens it had', async () => {
  const golden = JSON.parse(readFileSync(join(MODEL, 'golden.json'), 'utf8')).cases[1];
  const lines = await intab(
    'generate', '--model', join(MODEL, 'stories260K.gguf'), '--prompt-ids', golden.prompt.join(','),
    '--max-tokens', '64', '--temperature', '0', '--ignore-eos', '--concurrency', '2', '--abort-after-tokens', '4',
  );
  const done = lines.filter((l) => l.done === true);
  expect(done).toHaveLength(2);
  for (const d of done) {
    expect(d.finish_reason).toBe('abort');
    expect(d.abort_after_tokens).toBe(4);
    // Aborted once 4 tokens had arrived: the stream ends with those, and not one token after the abort. The pull that
    // crossed 4 may bring more at once (the engine coalesces what it queued), at most its queue's 8 chunks of one token.
    const ids = d.ids as number[];
    expect(ids.length).toBe(d.aborted_at_tokens);
    expect(ids.length).toBeGreaterThanOrEqual(4);
    expect(ids.length).toBeLessThanOrEqual(3 + ABORT_QUEUE_BOUND);
    expect(ids).toEqual(golden.greedy.slice(0, ids.length));
    expect(typeof d.abort_latency_ms).toBe('number'); // reported (a figure for intab bench, not asserted here)
  }
  expect(lines.at(-1)).toMatchObject({ summary: true, finish_reasons: ['abort', 'abort'] });
  // every token line belongs to a stream's ids: nothing was printed after a stream's abort
  for (const d of done) expect(lines.filter((l) => l.id !== undefined && l.stream === d.stream).map((l) => l.id)).toEqual(d.ids);

  // a single stream (no --concurrency) aborts the same way, its lines untagged
  const one = await intab('generate', '--model', join(MODEL, 'stories260K.gguf'), '--prompt-ids', golden.prompt.join(','), '--max-tokens', '64', '--temperature', '0', '--abort-after-tokens', '3');
  const last = one.at(-1)!;
  expect(last).toMatchObject({ done: true, finish_reason: 'abort', abort_after_tokens: 3 });
  expect(last.stream).toBeUndefined();
  const ids = last.ids as number[];
  expect(ids.length).toBe(last.aborted_at_tokens);
  expect(ids.length).toBeGreaterThanOrEqual(3);
  expect(ids.length).toBeLessThanOrEqual(2 + ABORT_QUEUE_BOUND);
  expect(one.slice(0, -1).map((l) => l.id)).toEqual(ids);
});

test('intab bench decode --batch: one line per batch size with aggregate and per-stream decode speeds', async () => {
  const lines = await intab('bench', 'decode', '--model', join(MODEL, 'stories260K.gguf'), '--batch', '1,2', '--prompt-tokens', '8', '--max-tokens', '6');
  expect(lines.map((l) => [l.bench, l.batch, l.prompt_tokens, l.max_tokens, l.generated_tokens])).toEqual([
    ['decode', 1, 8, 6, 6],
    ['decode', 2, 8, 6, 12],
  ]);
  for (const l of lines) for (const k of ['aggregate_decode_tok_s', 'per_stream_decode_tok_s', 'ttft_ms']) expect(l[k]).toBeGreaterThan(0);
});

test('intab generate --speculative: self and draft speculation give the plain greedy ids, with their metrics on the done line', async () => {
  const golden = JSON.parse(readFileSync(join(MODEL, 'golden.json'), 'utf8')).cases[1];
  const model = join(MODEL, 'stories260K.gguf');
  const args = ['--model', model, '--prompt-ids', golden.prompt.join(','), '--max-tokens', '12', '--temperature', '0'];
  // Plain greedy decoding gives the golden ids (the first test runs it; its done line has no speculative field there).
  const plain = { ids: golden.greedy.slice(0, 12) };

  // fixed k, so every decode step verifies proposals whatever the measured costs say
  const self = await intab('generate', ...args, '--speculative', 'self', '--spec-k', '3', '--no-adaptive');
  const selfDone = self.at(-1)!;
  expect(selfDone.ids).toEqual(plain.ids);
  expect(self.filter((l) => l.id !== undefined).map((l) => l.id)).toEqual(plain.ids);
  const s = selfDone.speculative as Record<string, number>;
  expect(s).toMatchObject({ method: 'self' });
  expect(s.verifySteps).toBeGreaterThan(0);
  expect(s.proposed).toBeGreaterThan(0);
  expect(s.tokens_per_target_step).toBeGreaterThanOrEqual(1);

  // the model as its own draft: every proposal is the target's own greedy token
  const draft = (await intab('generate', ...args, '--speculative', 'draft', '--draft', model, '--spec-k', '3', '--no-adaptive')).at(-1)!;
  expect(draft.ids).toEqual(plain.ids);
  expect(draft.speculative).toMatchObject({ method: 'draft', acceptance_rate: 1 });
  expect((draft.speculative as Record<string, number>).tokens_per_target_step).toBeGreaterThan(2);
});

test('intab bench chat: a turn line per mode and turn, the summary, --preload and --persist, with their promised fields', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'intab-chat-'));
  const conversation = join(dir, 'chat.json');
  writeFileSync(
    conversation,
    JSON.stringify([
      { role: 'system', content: 'You tell short stories about a cat and a dog.' },
      { role: 'user', content: 'Once upon a time' },
      { role: 'assistant', content: 'ignored: the model answers with its own replies' },
      { role: 'user', content: 'And then?' },
      { role: 'user', content: 'The end.' },
    ]),
  );
  const lines = await intab('bench', 'chat', '--model', join(MODEL, 'stories260K-vocab-ud.gguf'), '--conversation', conversation, '--max-tokens', '8', '--preload', '--persist', '--persist-tokens', '200', '--repeats', '1');
  const turns = lines.filter((l) => l.turn !== undefined);
  expect(turns.map((l) => `${l.prefix_cache}${l.turn}`).sort()).toEqual(['off0', 'off1', 'off2', 'on0', 'on1', 'on2']);
  for (const t of turns) {
    expect(Object.keys(t).sort()).toEqual(['bench', 'cached_tokens', 'ids', 'prefix_cache', 'prompt_tokens', 'ttft_ms', 'turn']);
    expect(t.bench).toBe('chat');
    expect(t.ids).toHaveLength(8);
    if (t.prefix_cache === 'off' || t.turn === 0) expect(t.cached_tokens).toBe(0);
    else expect(t.cached_tokens).toBeGreaterThan(0);
  }
  const summary = lines.find((l) => l.summary)!;
  expect(summary).toMatchObject({ bench: 'chat', summary: true, identical_ids: true });
  for (const k of ['ttft_ratio_last_turn', 'ttft_growth_on']) expect(summary[k]).toBeGreaterThan(0);
  const preload = lines.find((l) => l.preload)!;
  expect(preload).toMatchObject({ bench: 'chat', preload: true, identical_ids: true });
  expect(preload.cached_tokens).toBe(preload.system_tokens);
  for (const k of ['ttft_ms_no_preload', 'ttft_ms_preloaded', 'ttft_ms_user_only', 'preloaded_vs_user_only']) expect(preload[k]).toBeGreaterThan(0);
  const persist = lines.find((l) => l.persist)!;
  expect(persist).toMatchObject({ bench: 'chat', persist: true, prefix_tokens: 200, restored_tokens: 200, cached_tokens: 200, identical_ids: true, warnings: [] });
  for (const k of ['recompute_ms', 'restore_ms', 'restore_speedup']) expect(persist[k]).toBeGreaterThan(0);
});

test('intab bench store: the model store against the raw fetch and the network load, with its promised fields', async () => {
  const [line] = await intab('bench', 'store', '--model', join(MODEL, 'stories260K.gguf'), '--repeats', '1');
  expect(line).toMatchObject({ bench: 'store', bytes: 1043424, repeats: 1 });
  for (const k of ['raw_fetch_mib_s', 'store_download_mib_s', 'download_vs_raw', 'sha256_mib_s', 'verify_ms', 'load_network_ms', 'load_store_ms', 'load_store_vs_network']) expect(line[k], k).toBeGreaterThan(0);
});

test('intab bench share: the second tab attaches to the first one\'s engine, one model held, with the promised fields', async () => {
  const [line] = await intab('bench', 'share', '--model', join(MODEL, 'stories260K-vocab-ud.gguf'), '--tabs', '2', '--tokens', '8', '--rounds', '1');
  expect(line).toMatchObject({ bench: 'share', tabs: 2, sessions: 2, loads: 1, one_model: true, identical_ids: true, share_mode: 'shared-worker', target_next_load_ratio: 0.05, target_decode_ratio: 0.95 });
  expect(line.gpu_bytes_if_separate).toBe(2 * (line.gpu_bytes_held as number));
  for (const k of ['load_ms_first', 'load_ms_next', 'next_load_ratio', 'decode_tok_s_tabs', 'decode_tok_s_one_tab', 'decode_ratio']) expect(line[k], k).toBeGreaterThan(0);
  await expect(intab('bench', 'share', '--model', join(MODEL, 'hf'))).rejects.toThrow(/one GGUF file or a URL/);
  await expect(intab('bench', 'share', '--model', join(MODEL, 'stories260K.gguf'), '--tabs', '0')).rejects.toThrow(/--tabs needs/);
});

test('intab bench speculative --backend onnx-wasm: the methods the backend runs are measured, self-speculation (WebGPU only) is a skipped line saying why', async () => {
  const lines = await intab('bench', 'speculative', '--model', join(MODEL, 'stories260K.gguf'), '--backend', 'onnx-wasm', '--max-tokens', '16', '--repeats', '1');
  const bench = lines.filter((l) => l.bench === 'speculative');
  const ngram = bench.filter((l) => l.method === 'ngram');
  expect(ngram.map((l) => [l.prompt, l.adaptive])).toEqual([['grounded', true], ['grounded', false], ['open', true], ['open', false]]);
  for (const l of ngram) expect(l).toMatchObject({ identical_ids: true, backend: 'onnx-wasm' });
  const self = bench.filter((l) => l.method === 'self');
  expect(self.map((l) => l.prompt)).toEqual(['grounded', 'open']);
  for (const l of self) expect(String(l.skipped)).toMatch(/self-speculation needs the WebGPU backend/);
});
