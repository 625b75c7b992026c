// `--runtime node` end to end, as a user runs it: the CLI builds the Node runtime and runs the production kernels,
// Runner and engine on Dawn (here OpenGL through Mesa's llvmpipe, a compatibility-mode adapter: the f32,
// no-subgroup kernels); bench decode's figures, generate's greedy ids against stories260K's golden ids, the kernel
// lab's CPU-twin checks, and the carried bundle (intab bundle-node) run from a folder outside the repository.
// Needs Mesa's EGL (Debian: libegl1 libegl-mesa0 libgl1-mesa-dri; .ci/run installs them). Nothing here is timed.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { main } from './main.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SHARED = resolve(process.env.INTAB_SHARED ?? join(ROOT, '..', 'shared'));
const MODEL = join(SHARED, 'models', 'stories260K');
const GGUF = join(MODEL, 'stories260K.gguf');
const run = promisify(execFile);
const lines = (stdout: string) => stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

/** The repository's CLI with --runtime node. */
async function intabNode(...args: string[]): Promise<Record<string, unknown>[]> {
  const { stdout } = await run(process.execPath, [join(ROOT, 'packages/cli/bin/intab.mjs'), ...args, '--runtime', 'node', '--json'], { cwd: ROOT, timeout: 120_000 });
  return lines(stdout);
}

const golden = JSON.parse(readFileSync(join(MODEL, 'golden.json'), 'utf8')).cases as { prompt: number[]; greedy: number[] }[];
const carried = mkdtempSync(join(tmpdir(), 'intab-carry-'));
afterAll(() => rmSync(carried, { recursive: true, force: true }));

// One file, tests in order: the first may build the CLI (packages/cli/dist/cli, the Node runtime beside it), the rest reuse it.
describe('intab --runtime node (Dawn, no browser)', () => {
  test('bench decode prints the browser run\'s figures, with "runtime":"node" and the adapter', async () => {
    const [line] = await intabNode('bench', 'decode', '--model', GGUF, '--prompt-tokens', '8', '--max-tokens', '8');
    expect(line).toMatchObject({ bench: 'decode', done: true, runtime: 'node', finish_reason: 'length', prompt_tokens: 8, generated_tokens: 8, bind_groups_per_step: 0 });
    for (const k of ['prefill_tok_s', 'decode_tok_s', 'ttft_ms', 'weight_bytes_per_token', 'dispatches_per_token', 'dispatches_per_step', 'load_ms']) expect(line[k], k).toBeGreaterThan(0);
    expect(['vulkan', 'opengl']).toContain(line.dawn_backend);
    expect(['core', 'compatibility']).toContain(line.feature_level);
    expect(String(line.adapter)).not.toBe('');
    expect(line.model).toMatchObject({ arch: 'llama', layers: 5, vocab: 512 });
  }, 120_000);

  test('generate: the golden greedy ids of both prompts', async () => {
    for (const c of golden) {
      const out = await intabNode('generate', '--model', GGUF, '--prompt-ids', c.prompt.join(','), '--max-tokens', '24', '--temperature', '0');
      const done = out.at(-1)!;
      expect(done).toMatchObject({ done: true, runtime: 'node', prompt_tokens: c.prompt.length });
      expect(done.ids).toEqual(c.greedy.slice(0, 24));
      expect(out.slice(0, -1).map((l) => l.id)).toEqual(c.greedy.slice(0, 24)); // one token line each, untagged by runtime
    }
  }, 120_000);

  test('--backend auto and onnx-wasm run on onnxruntime-node (no hardware adapter here): golden ids, the backend and why', async () => {
    const c = golden[1];
    const out = await intabNode('generate', '--model', GGUF, '--backend', 'onnx-wasm', '--prompt-ids', c.prompt.join(','), '--max-tokens', '24', '--temperature', '0');
    expect(out.at(-1)).toMatchObject({ done: true, runtime: 'node', backend: 'onnx-wasm', dawn_backend: null, feature_level: null, ids: c.greedy.slice(0, 24) });
    expect(String(out.at(-1)!.adapter)).toMatch(/^onnxruntime-node [\d.]+ CPU EP \(\d+ threads?\)/);
    const [line] = await intabNode('bench', 'decode', '--model', GGUF, '--backend', 'auto', '--prompt-tokens', '8', '--max-tokens', '8');
    expect(line).toMatchObject({ bench: 'decode', done: true, runtime: 'node', generated_tokens: 8 });
    // Dawn's only adapter here is llvmpipe's (software): auto takes onnxruntime on the CPU, as the browser would.
    expect(line.backend).toBe('onnx-wasm');
    expect(line.decode_tok_s).toBeGreaterThan(0);
  }, 120_000);

  test('bench kernels: every kernel agrees with its CPU twin, then the quick benchmark', async () => {
    const out = await intabNode('bench', 'kernels', '--quick', '--filter', 'attention-decode');
    const checks = out.filter((r) => r.type === 'check');
    expect(checks.length).toBeGreaterThanOrEqual(16);
    for (const c of checks) expect(c.ok, `${c.name}: max error ${c.maxError}`).toBe(true);
    expect(checks.map((c) => c.name)).toContain('sampling (greedy, top-k/top-p, penalties)');
    const device = out.find((r) => r.type === 'device')!;
    expect(device).toMatchObject({ runtime: 'node' });
    expect(out.filter((r) => r.type === 'baseline').map((r) => r.kernel)).toEqual(['copyBufferToBuffer', 'stream-read']);
    const cases = out.filter((r) => r.type === 'case');
    expect(cases.length).toBeGreaterThan(0);
    for (const c of cases) expect(c.median_ms).toBeGreaterThan(0);
    expect(out.at(-1)).toMatchObject({ type: 'done' });
  }, 120_000);

  test('intab bundle-node: the carried folder runs with no repository and no node_modules around it', async () => {
    const { stdout } = await run(process.execPath, [join(ROOT, 'packages/cli/bin/intab.mjs'), 'bundle-node', '--out', carried, '--no-node'], { cwd: ROOT, timeout: 120_000 });
    expect(stdout).toContain('--dawn-backend vulkan');
    for (const f of ['intab-node.mjs', 'dawn.node']) expect(existsSync(join(carried, f)), f).toBe(true);
    const c = golden[1];
    const { stdout: out } = await run(process.execPath, [join(carried, 'intab-node.mjs'), 'generate', '--model', GGUF, '--prompt-ids', c.prompt.join(','), '--max-tokens', '8', '--temperature', '0', '--json'], { cwd: tmpdir(), timeout: 120_000 });
    expect(lines(out).at(-1)).toMatchObject({ done: true, runtime: 'node', ids: c.greedy.slice(0, 8) });
  }, 120_000);

  test('a dawn.node that cannot be loaded is a DawnUnavailableError saying what to do', async () => {
    const err = await intabNode('bench', 'decode', '--model', GGUF, '--dawn', join(carried, 'no-such', 'dawn.node')).catch((e: { stderr: string; code: number }) => e);
    expect(err).toMatchObject({ code: 1 });
    expect((err as { stderr: string }).stderr).toMatch(/DawnUnavailableError: Dawn for Node \(dawn\.node\) could not be loaded .*--dawn \/path\/to\/dawn\.node/);
  }, 120_000);
});

describe('--runtime and its flags, checked before anything starts', () => {
  test('--runtime takes node or chromium; node runs four commands (and serve); Dawn flags need it', async () => {
    await expect(main(['bench', 'decode', '--runtime', 'deno', '--model', GGUF])).rejects.toThrow('--runtime takes node (this process: Dawn, else onnxruntime-node) or chromium');
    await expect(main(['serve', '--runtime', 'chromium', '--threads', '2', '--model', GGUF])).rejects.toThrow('--threads goes with --runtime node');
    await expect(main(['serve', '--headed', '--model', GGUF])).rejects.toThrow('--headed shows the browser of --runtime chromium');
    await expect(main(['bench', 'chat', '--runtime', 'node', '--model', GGUF])).rejects.toThrow("--runtime node runs generate, bench decode, bench speculative, bench kernels; 'bench chat' runs in the browser only");
    await expect(main(['bench', 'decode', '--dawn-backend', 'vulkan', '--model', GGUF])).rejects.toThrow('--dawn-backend goes with --runtime node');
    await expect(main(['bundle-node'])).rejects.toThrow('--out DIR is required');
  });
});
