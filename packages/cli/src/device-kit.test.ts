// The device kit end to end, as a GPU loan runs it: `intab device-kit` writes the kit into a temporary folder, then
// its run.sh runs in --quick mode with nothing from the repository (its own Node and dawn.node, unpacked into a work
// folder): on Dawn's OpenGL backend (Mesa's llvmpipe through EGL), and, where Chromium's SwiftShader Vulkan driver is
// installed (Debian's chromium package, as in CI), on Dawn's Vulkan backend through the kit's own Vulkan loader, the
// path an NVIDIA machine takes. Trimmed to fit the suite (--filter: one kernel bench case; --dtypes q4_0); every
// kernel check still runs. Needs Mesa's EGL (.ci/run installs it). Nothing here is timed.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { kitPlan } from '../node/kit-run.ts';
import { KIT_MAX_BYTES } from './device-kit.ts';
import { main } from './main.ts';
import { ROOT } from './repo.ts';

type Line = Record<string, unknown>;

const work = mkdtempSync(join(tmpdir(), 'intab-device-kit-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const kit = join(work, 'kit');
const kitWork = join(work, 'work');
const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

function run(file: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: work, timeout: 280_000, maxBuffer: 64 << 20, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const jsonLines = (text: string): Line[] => text.trim().split('\n').map((l) => JSON.parse(l) as Line);

/** What a --quick run printed, checked the same way on either backend; returns the lines. */
function expectQuickRun(r: { code: number; stdout: string; stderr: string }, backend: 'opengl' | 'vulkan'): Line[] {
  expect(r.code, r.stderr.slice(-3000)).toBe(0);
  const lines = jsonLines(r.stdout);
  // results.jsonl holds exactly what stdout got
  expect(jsonLines(readFileSync(join(kit, 'results.jsonl'), 'utf8'))).toEqual(lines);
  expect(readFileSync(join(kit, 'run.log'), 'utf8')).toContain(`[kit] running intab-node.mjs kit-run on Dawn's ${backend} backend (quick)`);

  const start = lines[0];
  expect(start).toMatchObject({ kit: 'start', quick: true, dawn_backend: backend, kit_id: readFileSync(join(kit, 'kit-id'), 'utf8').trim(), shapes: ['smollm2-135m'], dtypes: ['q4_0'], batches: '1,4' });
  expect(start.exec_path).toBe(join(kitWork, 'bin', 'node')); // the kit's own Node ran, not this one

  const checks = lines.filter((l) => l.type === 'check');
  expect(checks.length).toBeGreaterThanOrEqual(16);
  for (const c of checks) expect(c.ok, `${c.name}: max error ${c.maxError} > ${c.tolerance}`).toBe(true);
  expect(checks.map((c) => c.name)).toEqual(expect.arrayContaining(['gemv q4_0', 'gemv q8_0', 'gemm q4_0 T=7', 'attention decode (paged, GQA)', 'rmsnorm']));

  const device = lines.find((l) => l.type === 'device')!;
  expect(device).toMatchObject({ runtime: 'node', dawn_backend: backend });
  const cases = lines.filter((l) => l.type === 'case');
  expect(cases.length).toBeGreaterThan(0);
  for (const c of cases) {
    expect(c.kernel).toBe('attention-decode');
    expect(c.read_ratio).toBeGreaterThan(0);
    expect(typeof c.adapter === 'string' && c.adapter.length > 0, 'adapter on kernel lines').toBe(true);
  }

  const model = lines.find((l) => l.kit === 'model')!;
  expect(model).toMatchObject({ like: 'smollm2-135m', dtype: 'q4_0', layers: 2, vocab: 49152 });
  expect(statSync(String(model.out)).size).toBe(model.bytes);

  const decodes = lines.filter((l) => l.bench === 'decode');
  expect(decodes.map((d) => d.batch)).toEqual([1, 4]);
  for (const d of decodes) {
    expect(d).toMatchObject({ like: 'smollm2-135m', runtime: 'node', dawn_backend: backend, prompt_tokens: 8, max_tokens: 8, generated_tokens: 8 * Number(d.batch), model: { layers: 2, dtype: 'q4_0' } });
    expect(d.adapter).toBe(cases[0].adapter);
    // two q4_0 layers and the tied 49152 x 576 embedding: about 19 MB read per token
    expect(d.weight_bytes_per_token).toBeGreaterThan(15e6);
    expect(d.weight_bytes_per_token).toBeLessThan(25e6);
    expect(d.aggregate_decode_tok_s).toBeGreaterThan(0);
  }

  expect(lines.at(-1)).toMatchObject({ kit: 'summary', ok: true, dawn_backend: backend, adapter: cases[0].adapter, checks: checks.length, checks_failed: [], kernel_cases: cases.length, models: 1, decode_lines: 2, failed_steps: 0 });
  return lines;
}

describe('intab device-kit', { timeout: 300_000 }, () => {
  test('writes a kit of at most 48 MiB whose files match its manifest', async () => {
    const r = await run(process.execPath, [join(ROOT, 'packages/cli/bin/intab.mjs'), 'device-kit', '--out', kit]);
    expect(r.code, r.stderr).toBe(0);
    const [summary] = jsonLines(r.stdout);
    expect(summary).toMatchObject({ device_kit: kit, compress: 'gzip', node: process.version, webgpu: '0.6.2' });
    expect(summary.bytes).toBeLessThanOrEqual(KIT_MAX_BYTES);
    const manifest = JSON.parse(readFileSync(join(kit, 'kit.json'), 'utf8')) as { id: string; files: Record<string, { bytes: number; sha256: string }>; vulkan_loader: string | null };
    expect(manifest.id).toBe(summary.id);
    expect(Object.keys(manifest.files)).toEqual(expect.arrayContaining(['run.sh', 'README.md', 'intab-node.mjs', 'node.gz', 'dawn.node.gz', 'LICENSE-dawn.md']));
    for (const [f, { bytes, sha256 }] of Object.entries(manifest.files)) {
      const data = readFileSync(join(kit, f));
      expect(data.byteLength, f).toBe(bytes);
      expect(createHash('sha256').update(data).digest('hex'), f).toBe(sha256);
    }
    expect(statSync(join(kit, 'run.sh')).mode & 0o111).toBe(0o111);
    if (manifest.vulkan_loader) expect(manifest.files['lib/libvulkan.so.1.gz']).toBeDefined();
  });

  test('run.sh --quick on Dawn OpenGL: every kernel check passes, then bench kernels and bench decode lines', async () => {
    const r = await run(join(kit, 'run.sh'), ['--quick', '--dawn-backend', 'opengl', '--work', kitWork, '--filter', 'attention-decode', '--dtypes', 'q4_0']);
    const lines = expectQuickRun(r, 'opengl');
    expect(lines.find((l) => l.type === 'device')).toMatchObject({ feature_level: 'compatibility', features: { shaderF16: false } });
    expect(lines.find((l) => l.kit === 'model')).toMatchObject({ reused: false });
    expect(r.stderr).toContain('[kit] unpacking node and dawn.node');
  });

  test.skipIf(!existsSync(SWIFTSHADER_ICD))('run.sh --quick on Dawn Vulkan (SwiftShader\'s ICD, the kit\'s loader): the NVIDIA path, subgroup kernels checked', async () => {
    const manifest = JSON.parse(readFileSync(join(kit, 'kit.json'), 'utf8')) as { vulkan_loader: string | null };
    expect(manifest.vulkan_loader, 'Chromium is installed, so its libvulkan.so.1 is carried').not.toBeNull();
    const r = await run(join(kit, 'run.sh'), ['--quick', '--dawn-backend', 'vulkan', '--work', kitWork, '--filter', 'attention-decode', '--dtypes', 'q4_0'], { VK_DRIVER_FILES: SWIFTSHADER_ICD });
    const lines = expectQuickRun(r, 'vulkan');
    expect(lines.find((l) => l.type === 'device')).toMatchObject({ feature_level: 'core', features: { subgroups: true } });
    // the second run of a kit: nothing unpacked again, the model made by the first run reused
    expect(lines.find((l) => l.kit === 'model')).toMatchObject({ reused: true });
    expect(r.stderr).not.toContain('unpacking');
    expect(r.stderr).toContain(`[kit] Vulkan driver: ${SWIFTSHADER_ICD}`);
  });

  test('no adapter: the kernels step fails, no model is made, the summary says not ok, exit 1', async () => {
    const r = await run(join(kit, 'run.sh'), ['--quick', '--dawn-backend', 'vulkan', '--work', kitWork], { VK_DRIVER_FILES: join(work, 'no-such-icd.json') });
    expect(r.code).toBe(1);
    const lines = jsonLines(r.stdout);
    expect(lines.map((l) => l.kit ?? l.type)).toEqual(['start', 'step-failed', 'skipped', 'summary']);
    expect(lines[1]).toMatchObject({ step: 'bench kernels', exit_code: 1 });
    expect(lines[3]).toMatchObject({ ok: false, adapter: null, checks: 0, models: 0, decode_lines: 0, failed_steps: 1 });
    expect(readFileSync(join(kit, 'run.log'), 'utf8')).toContain('DawnUnavailableError: Dawn found no GPU adapter on backend vulkan');
  });

  test('run.sh refuses what it cannot do, saying what to do', async () => {
    const bad = await run(join(kit, 'run.sh'), ['--quik']);
    expect(bad).toMatchObject({ code: 2, stderr: "run.sh: unknown argument '--quik' (run.sh --help lists them)\n" });
    expect(await run(join(kit, 'run.sh'), ['--dawn-backend', 'metal'])).toMatchObject({ code: 2, stderr: 'run.sh: --dawn-backend takes auto, vulkan or opengl, e.g. --dawn-backend vulkan\n' });
    const help = await run(join(kit, 'run.sh'), ['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: run.sh \[--quick\]/);
  });

  test('intab device-kit checks its flags and its folder before writing anything', async () => {
    await expect(main(['device-kit'])).rejects.toThrow('--out DIR is required');
    await expect(main(['device-kit', '--out', join(work, 'k2'), '--compress', 'zip'])).rejects.toThrow('--compress takes gzip or xz');
    await expect(main(['device-kit', '--out', join(work, 'k2'), '--node', join(kit, 'README.md')])).rejects.toThrow('is not an x86-64 Linux binary');
    const busy = join(work, 'busy');
    mkdirSync(busy);
    writeFileSync(join(busy, 'notes.txt'), 'mine');
    await expect(main(['device-kit', '--out', busy])).rejects.toMatchObject({ name: 'DeviceKitError', reason: 'not-a-kit' });
    expect(readdirSync(busy)).toEqual(['notes.txt']);
  });
});

describe('what a kit run does (kit-run\'s plan)', () => {
  test('the full run: the issue\'s three shapes at their real size, q4_0, q8_0 and f16, 128-token prompts and decodes', () => {
    expect(kitPlan({})).toMatchObject({ quick: false, shapes: ['smollm2-135m', 'qwen3-0.6b', 'llama-3.2-1b'], dtypes: ['q4_0', 'q8_0', 'f16'], layers: undefined, promptTokens: 128, maxTokens: 128 });
  });
  test('--quick: two layers of SmolLM2-135M, 8 tokens; --shapes and --dtypes pick a subset, anything else is refused', () => {
    expect(kitPlan({ quick: true })).toMatchObject({ quick: true, shapes: ['smollm2-135m'], dtypes: ['q4_0', 'q8_0', 'f16'], layers: 2, promptTokens: 8, maxTokens: 8 });
    expect(kitPlan({ shapes: 'llama-3.2-1b', dtypes: 'q8_0,f16' })).toMatchObject({ shapes: ['llama-3.2-1b'], dtypes: ['q8_0', 'f16'] });
    expect(() => kitPlan({ shapes: 'llama-3.2-3b' })).toThrow('--shapes takes a comma-separated subset of smollm2-135m,qwen3-0.6b,llama-3.2-1b (not llama-3.2-3b)');
    expect(() => kitPlan({ dtypes: true })).toThrow('--dtypes takes a comma-separated subset of q4_0,q8_0,f16');
  });
});
