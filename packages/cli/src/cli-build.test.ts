// How bin/intab.mjs runs the TypeScript CLI on Node 20: it builds it (Vite, into packages/cli/dist/cli/<key>) and runs
// the build, whose folder is named by the content of every file that went into it. Checked on a copy of the workspace
// in a temporary folder (node_modules linked to this repository's), so its sources can be edited: the first run builds;
// a second reuses it; an edited source is never run stale (the next run builds again and prints the edit); back to the
// old content, the old build is fresh again; and three first runs at once all succeed and leave one complete build,
// no half-written file.
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { ROOT } from './repo.ts';

const work = mkdtempSync(join(tmpdir(), 'intab-cli-build-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * A copy of the workspace's sources (packages, examples, shaders; the packages' node_modules as the links they are),
 * its node_modules linked to this repository's: what the build reads cannot change under the test but by the test.
 */
function workspace(): string {
  const root = join(work, 'repo');
  for (const f of ['pnpm-workspace.yaml', 'package.json', 'tsconfig.json', 'pnpm-lock.yaml']) cpSync(join(ROOT, f), join(root, f));
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
  for (const dir of ['packages', 'examples', 'shaders']) {
    cpSync(join(ROOT, dir), join(root, dir), { recursive: true, verbatimSymlinks: true, filter: (src) => !/[/\\](dist|test-results)$/.test(src) });
  }
  return root;
}

const root = workspace();
const bin = join(root, 'packages/cli/bin/intab.mjs');
const dist = join(root, 'packages/cli/dist/cli');
const main = join(root, 'packages/cli/src/main.ts');
const original = readFileSync(main, 'utf8');

function help(): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, '--help'], { cwd: root, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The build folders (named by their key), and anything a build left half done. */
const builds = () => readdirSync(dist).filter((f) => !f.startsWith('.') && f !== 'sources.json');
const leftovers = () => readdirSync(dist).filter((f) => f.startsWith('.'));

describe('bin/intab.mjs builds the TypeScript CLI and runs the build', { timeout: 180_000 }, () => {
  test('the first run builds, the next reuses the build', async () => {
    const first = await help();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^usage:\n {2}intab generate/);
    expect(first.stderr).toMatch(/\[intab\] building the CLI .*\n\[intab\] built packages\/cli\/dist\/cli\/[0-9a-f]{24} in [\d.]+ s\n/);
    expect(builds()).toHaveLength(1);
    for (const f of ['intab.mjs', 'intab-node.mjs']) expect(existsSync(join(dist, builds()[0], f)), f).toBe(true);
    // What the key covers: the CLI's sources, the workspace packages' and the WGSL they import (`?raw`).
    const { sources } = JSON.parse(readFileSync(join(dist, 'sources.json'), 'utf8')) as { sources: string[] };
    for (const end of ['packages/cli/src/main.ts', 'packages/cli/node/main.ts', 'packages/cli/page/run-job.ts', 'packages/engine/src/sequence.ts', 'packages/intab/src/sse.ts', 'shaders/matmul/embedding.wgsl']) {
      expect(sources.some((s) => s.endsWith(end)), end).toBe(true);
    }

    const second = await help();
    expect(second.code).toBe(0);
    expect(second.stderr).toBe('');
    expect(second.stdout).toBe(first.stdout);
    expect(builds()).toHaveLength(1);
  });

  test('an edited source is never run stale: the next run builds it; its old content finds the old build again', async () => {
    const [before] = builds();
    writeFileSync(main, original.replace('export const USAGE = `usage:', 'export const USAGE = `usage (edited):'));
    const edited = await help();
    expect(edited.code, edited.stderr).toBe(0);
    expect(edited.stderr).toMatch(/building the CLI/);
    expect(edited.stdout).toMatch(/^usage \(edited\):\n/);
    expect(builds()).toHaveLength(2);

    writeFileSync(main, original);
    const back = await help();
    expect(back.stderr).toBe('');
    expect(back.stdout).toMatch(/^usage:\n/);
    expect(builds()).toContain(before);
  });

  test('three first runs at once: each runs, one complete build is left, nothing half written', async () => {
    rmSync(join(root, 'packages/cli/dist'), { recursive: true, force: true });
    const runs = await Promise.all([help(), help(), help()]);
    for (const r of runs) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^usage:\n/);
    }
    expect(builds()).toHaveLength(1);
    expect(leftovers()).toEqual([]);
    // The two entries, and the chunks they share or load lazily (the serve runtimes), all written by Vite.
    const files = readdirSync(join(dist, builds()[0]));
    expect(files).toEqual(expect.arrayContaining(['intab.mjs', 'intab-node.mjs']));
    for (const f of files) expect(f).toMatch(/^intab(-[\w.-]+)?\.mjs$/);
  });
});
