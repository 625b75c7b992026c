// The layering test (convention 15, "a package is entered by its front door"): over every package of the workspace,
// onnx and the CLI included, no relative import leaves a package, every package a file imports is declared and
// entered by its exports, imports point down the layers, and production code reaches no test-only code (nor does
// anything the published `intab` package's entries reach). The rules are scripts/layering.ts's; a made-up workspace
// with one violation of each kind shows that each rule fails when it should.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { intabEntries } from './intab-source.ts';
import {
  exportTarget,
  isCliBenchmark,
  isTestOnly,
  isTooling,
  packageOf,
  specifiers,
  violations,
  type PackageJson,
  type Violation,
  type ViolationKind,
  type Workspace,
  type WorkspacePackage,
} from './layering.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CODE = /\.(ts|mts|mjs|js)$/;
const rel = (abs: string) => relative(ROOT, abs).split(sep).join('/');

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return walk(path);
    return CODE.test(name) && !/\.d\.m?ts$/.test(name) ? [path] : [];
  });
}

/** This repository: the folders pnpm-workspace.yaml names (packages/*, examples/*), their package.json and sources. */
function repository(): Workspace {
  const globs = [...readFileSync(join(ROOT, 'pnpm-workspace.yaml'), 'utf8').matchAll(/^\s*-\s*(\S+)\/\*\s*$/gm)].map((m) => m[1]);
  const packages: WorkspacePackage[] = globs.flatMap((g) =>
    readdirSync(join(ROOT, g))
      .filter((d) => existsSync(join(ROOT, g, d, 'package.json')))
      .map((d) => ({ dir: `${g}/${d}`, json: JSON.parse(readFileSync(join(ROOT, g, d, 'package.json'), 'utf8')) as PackageJson })),
  );
  const files = new Map(packages.flatMap((p) => walk(join(ROOT, p.dir)).map((f) => [rel(f), readFileSync(f, 'utf8')] as const)));
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
  return { packages, files, rootDevDependencies: Object.keys(root.devDependencies ?? {}) };
}

const show = (vs: Violation[]) => vs.map((v) => `${v.file}: '${v.specifier}': ${v.message}`);
const ofKind = (vs: Violation[], kind: ViolationKind) => show(vs.filter((v) => v.kind === kind));

describe('the borders between packages hold in this repository', () => {
  const ws = repository();
  const found = violations(ws);

  test('the scan sees every package and the files it is meant to, and tells production from tooling', () => {
    const names = ws.packages.map((p) => p.json.name).sort();
    for (const n of ['@intab/errors', '@intab/gpu', '@intab/grammar', '@intab/model', '@intab/onnx', '@intab/engine', 'intab', '@intab/cli', '@intab/testing', '@intab/kernel-lab']) expect(names).toContain(n);
    for (const f of ['packages/onnx/src/onnx-runner.ts', 'packages/engine/src/sequence.ts', 'packages/cli/src/main.ts', 'packages/cli/node/kernels.ts', 'packages/cli/page/run-job.ts', 'packages/intab/src/index.ts']) {
      expect(ws.files.has(f), f).toBe(true);
      expect(isTooling(f), f).toBe(false);
    }
    for (const f of ['packages/cli/src/grammar-bench.ts', 'packages/cli/src/bench-grammar.ts', 'packages/cli/src/make-model.ts', 'packages/cli/page/bench-decode.ts', 'packages/cli/page/peers/wllama.ts']) {
      expect(ws.files.has(f), f).toBe(true);
      expect(isCliBenchmark(f), f).toBe(true);
    }
    for (const f of ['packages/gpu/src/reference/matmul.ts', 'packages/engine/src/reference/runner.ts', 'packages/grammar/src/testing.ts', 'packages/grammar/src/test-oracle.ts', 'packages/testing/src/fuzz.ts']) expect(isTestOnly(f), f).toBe(true);
  });

  test('no relative import leaves its package (nothing in a package imports scripts/)', () => {
    expect(ofKind(found, 'relative')).toEqual([]);
  });

  test('every package imported is a package of the workspace, entered by its exports', () => {
    expect(ofKind(found, 'unknown-package')).toEqual([]);
    expect(ofKind(found, 'not-exported')).toEqual([]);
  });

  test('every package imported is declared in the importer\'s package.json', () => {
    expect(ofKind(found, 'undeclared')).toEqual([]);
  });

  test('imports point down the layers', () => {
    expect(ofKind(found, 'layer')).toEqual([]);
  });

  test('production code imports no test-only module and not @intab/testing, which stays a private devDependency', () => {
    expect(ofKind(found, 'test-only')).toEqual([]);
    expect(ofKind(found, 'testing-dependency')).toEqual([]);
  });

  test('the published intab package reaches no test-only module, following every import', () => {
    // Each export's sources, as the monorepo resolves them (scripts/intab-source.ts; dist/ is built from them).
    const byName = new Map(ws.packages.map((p) => [p.json.name, p]));
    const entries = intabEntries().map((e) => rel(e.source));
    expect(entries).toEqual(['packages/intab/src/index.ts', 'packages/intab/src/service-worker.ts', 'packages/intab/src/vite.ts']);
    const parent = new Map<string, string>();
    const seen = new Set(entries);
    const queue = [...entries];
    while (queue.length) {
      const f = queue.shift()!;
      if (!CODE.test(f) || !existsSync(join(ROOT, f))) continue;
      for (const s of specifiers(readFileSync(join(ROOT, f), 'utf8'))) {
        const p = packageOf(s);
        const pkg = p && byName.get(p.name);
        const t = s.startsWith('.') ? rel(join(ROOT, f, '..', s.replace(/\?.*$/, ''))) : pkg ? exportTarget(pkg, p.subpath) : undefined;
        if (t === undefined || seen.has(t)) continue;
        seen.add(t);
        parent.set(t, f);
        queue.push(t);
      }
    }
    const chain = (f: string): string => (parent.has(f) ? `${chain(parent.get(f)!)} -> ${f}` : f);
    expect([...seen].filter(isTestOnly).map(chain), 'a test twin or test helper would ship in the library').toEqual([]);
    expect([...seen].filter((f) => f.startsWith('packages/engine/')).length).toBeGreaterThan(20); // it did follow the workspace packages
  });
});

describe('each rule fails on its violation (a made-up workspace)', () => {
  const pkg = (dir: string, name: string, deps: string[] = [], exports: Record<string, string> = { '.': './src/index.ts' }, dev: string[] = []): WorkspacePackage => ({
    dir,
    json: { name, private: true, exports, dependencies: Object.fromEntries(deps.map((d) => [d, 'workspace:*'])), devDependencies: Object.fromEntries(dev.map((d) => [d, 'workspace:*'])) },
  });
  const packages = [
    pkg('packages/errors', '@intab/errors'),
    pkg('packages/gpu', '@intab/gpu', ['@intab/errors', '@intab/model'], { '.': './src/index.ts', './reference': './src/reference/index.ts' }),
    pkg('packages/model', '@intab/model', ['@intab/gpu'], { '.': './src/index.ts' }, ['@intab/testing']),
    pkg('packages/testing', '@intab/testing', ['@intab/gpu'], { './random': './src/random.ts' }),
    pkg('packages/cli', '@intab/cli', ['@intab/model', '@intab/gpu'], { '.': './src/main.ts' }, ['@intab/testing']),
  ];
  /** The violations of a workspace made of these packages and `files`. */
  const check = (files: Record<string, string>) => violations({ packages, files: new Map(Object.entries(files)), rootDevDependencies: ['vitest'] });
  const kinds = (files: Record<string, string>) => check(files).map((v) => `${v.kind} ${v.file} ${v.specifier}`);

  test('the clean workspace has none: down the layers, by exports, declared, tests on @intab/testing, a CLI benchmark too', () => {
    expect(
      kinds({
        'packages/model/src/load.ts': "import { requestGpu } from '@intab/gpu';\nimport { a } from './arch/llama.ts';",
        'packages/model/src/load.test.ts': "import { test } from 'vitest';\nimport { mulberry32 } from '@intab/testing/random';\nimport { matmul } from '@intab/gpu/reference';",
        'packages/gpu/src/kernels/gemv.ts': "import wgsl from '../../../../shaders/matmul/gemv.wgsl?raw';",
        'packages/cli/src/bench-decode.ts': "import { mulberry32 } from '@intab/testing/random';",
        'packages/testing/src/random.ts': "export { mulberry32 } from '@intab/gpu';",
      }),
    ).toEqual([]);
  });

  test('a relative import out of a package (another package\'s src, scripts/, WGSL from outside @intab/gpu)', () => {
    expect(
      kinds({
        'packages/cli/src/tool.ts': "import { x } from '../../model/src/tokenizer/tokenizer.ts';",
        'packages/model/src/x.test.ts': "import setup from '../../../scripts/hub-server-setup.mjs';",
        'packages/model/src/arch/llama.ts': "import wgsl from '../../../../shaders/matmul/gemv.wgsl?raw';",
      }),
    ).toEqual(['relative packages/cli/src/tool.ts ../../model/src/tokenizer/tokenizer.ts', 'relative packages/model/src/x.test.ts ../../../scripts/hub-server-setup.mjs', 'relative packages/model/src/arch/llama.ts ../../../../shaders/matmul/gemv.wgsl?raw']);
  });

  test('an undeclared dependency (a workspace package, a third-party one in production, in a test unless the root has it)', () => {
    expect(
      kinds({
        'packages/model/src/errors.ts': "import { IntabError } from '@intab/errors';",
        'packages/model/src/util.ts': "import { debounce } from 'lodash';",
        'packages/model/src/util.test.ts': "import { test } from 'vitest';\nimport { debounce } from 'lodash';",
      }),
    ).toEqual(['undeclared packages/model/src/errors.ts @intab/errors', 'undeclared packages/model/src/util.ts lodash', 'undeclared packages/model/src/util.test.ts lodash']);
  });

  test('a package entered by a path it does not export, or one the workspace does not have', () => {
    expect(kinds({ 'packages/model/src/a.ts': "import { requestGpu } from '@intab/gpu/src/device.ts';\nimport { x } from '@intab/nowhere';" })).toEqual([
      'not-exported packages/model/src/a.ts @intab/gpu/src/device.ts',
      'unknown-package packages/model/src/a.ts @intab/nowhere',
    ]);
  });

  test('an import up the layers (declared or not), in production or in a test', () => {
    expect(kinds({ 'packages/gpu/src/device.ts': "import { openGguf } from '@intab/model';", 'packages/gpu/src/device.test.ts': "import { openGguf } from '@intab/model';" })).toEqual([
      'layer packages/gpu/src/device.ts @intab/model',
      'layer packages/gpu/src/device.test.ts @intab/model',
    ]);
    expect(kinds({ 'packages/testing/src/cli.ts': "import { main } from '@intab/cli';" })).toContain('layer packages/testing/src/cli.ts @intab/cli');
  });

  test('test-only code reached from production: a reference/ export, @intab/testing, a test helper by path; also from the CLI outside its benchmarks', () => {
    expect(
      kinds({
        'packages/model/src/runner.ts': "import { matmul } from '@intab/gpu/reference';\nimport { mulberry32 } from '@intab/testing/random';\nimport { corpus } from './tokenizer/test-corpus.ts';",
        'packages/cli/src/serve.ts': "import { mulberry32 } from '@intab/testing/random';",
      }),
    ).toEqual([
      'test-only packages/model/src/runner.ts @intab/gpu/reference',
      'test-only packages/model/src/runner.ts @intab/testing/random',
      'test-only packages/model/src/runner.ts ./tokenizer/test-corpus.ts',
      'test-only packages/cli/src/serve.ts @intab/testing/random',
    ]);
  });

  test('@intab/testing as a run-time dependency, or published', () => {
    const bad = [...packages.slice(0, 3), pkg('packages/cli', '@intab/cli', ['@intab/testing']), { dir: 'packages/testing', json: { name: '@intab/testing' } }];
    const found = violations({ packages: bad, files: new Map(), rootDevDependencies: [] }).map((v) => `${v.kind} ${v.file}`);
    expect(found).toEqual(['testing-dependency packages/cli/package.json', 'testing-dependency packages/testing/package.json']);
  });

  test('the import reader and the bare-name parser', () => {
    expect(specifiers(`import a from './x.ts';\nexport { b } from "@intab/gpu/reference";\nimport './y.css';\nawait import('./z.ts');`)).toEqual(['./x.ts', '@intab/gpu/reference', './y.css', './z.ts']);
    expect(packageOf('@intab/gpu/reference')).toEqual({ name: '@intab/gpu', subpath: './reference' });
    expect(packageOf('intab')).toEqual({ name: 'intab', subpath: '.' });
    expect(packageOf('ajv/dist/2020.js')).toEqual({ name: 'ajv', subpath: './dist/2020.js' });
    expect(packageOf('node:fs')).toBeUndefined();
    expect(packageOf('fs/promises')).toBeUndefined();
    expect(packageOf('virtual:pwa-register')).toBeUndefined();
  });
});
