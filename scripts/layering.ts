// The borders between intab's packages, written down once and checked by one scan (scripts/layering.test.ts runs it
// over this repository, and over small made-up workspaces with one violation each, so every rule is seen to fail).
// A file imports another package only by its name and `exports`, declares it in its package.json, never reaches up
// the layers, never leaves its package by a relative path, and production code never reaches test-only code. Pure:
// it reads only what it is given (package.json objects and source texts), so a made-up workspace needs no disk.
import { builtinModules } from 'node:module';
import { posix } from 'node:path';

// ---- the layers ----

/**
 * The library packages, bottom up: a package may import the packages of lower layers, never its own layer's or a
 * higher one's. `@intab/errors` is under all; `@intab/gpu` and `@intab/grammar` stand side by side; the CLI is on top.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['@intab/errors'],
  ['@intab/gpu', '@intab/grammar'],
  ['@intab/model'],
  ['@intab/onnx'],
  ['@intab/engine'],
  ['intab'],
  ['@intab/cli'],
];

/**
 * Outside the layers: the examples use the public package (the PWA also the demo chat's view and style), the kernel lab
 * the GPU runtime; the CLI runs the kernel lab's checks and benchmark (`intab bench kernels`).
 */
export const EXTRA_IMPORTS: Readonly<Record<string, readonly string[]>> = {
  '@intab/example-chat': ['intab'],
  '@intab/example-pwa': ['intab', '@intab/example-chat'],
  '@intab/kernel-lab': ['@intab/gpu'],
  '@intab/cli': ['@intab/kernel-lab'],
};

/** The private test package: it may import every library package; only tests and tooling may import it. */
export const TESTING = '@intab/testing';

// ---- what a file is ----

/**
 * Test-only modules, which production code never imports: tests (`*.test.ts`), a package's test helpers (`testing.ts`,
 * `test-*.ts`), the CPU twins and reference runners (anything under a `reference/` folder), and all of @intab/testing.
 */
export function isTestOnly(path: string): boolean {
  return (
    /\.test\.ts$/.test(path) ||
    /(^|\/)(testing|test-[\w.-]+)\.(ts|mts|mjs)$/.test(path) ||
    /(^|\/)reference\//.test(path) ||
    path.startsWith('packages/testing/')
  );
}

/**
 * The CLI's benchmarks: its production code is src/, page/ and node/, except the files of the benchmark commands,
 * named `bench-*.ts` or `*-bench.ts` (src/ and page/), `make-model.ts` (random-weight models for them) and page/peers/
 * (`bench compare`'s other systems). They are tooling: they may use @intab/testing's corpus and model writers.
 */
export function isCliBenchmark(path: string): boolean {
  if (!path.startsWith('packages/cli/')) return false;
  const base = posix.basename(path);
  return /^bench-[\w-]+\.ts$/.test(base) || /-bench\.ts$/.test(base) || base === 'make-model.ts' || path.startsWith('packages/cli/page/peers/');
}

/**
 * A package's own build configuration (`vite.config.ts` beside its package.json): repository tooling that lives in the
 * package's folder. Vite's config loader hands bare imports to Node, which cannot load TypeScript, so such a config
 * reaches scripts/intab-source.ts by its path; it is the one thing in a package folder that may import scripts/.
 */
export function isPackageConfig(path: string): boolean {
  return /^(packages|examples)\/[^/]+\/[^/]+\.config\.(ts|mts|mjs|js)$/.test(path);
}

/** Tooling: may import test-only modules. Tests and test helpers, @intab/testing, the CLI's benchmarks, the kernel lab (its checks are the CPU twins'), build configs. */
export function isTooling(path: string): boolean {
  return isTestOnly(path) || isCliBenchmark(path) || path.startsWith('examples/kernel-lab/') || isPackageConfig(path);
}

// ---- reading imports ----

/** Every module specifier: import/export ... from, bare import, dynamic import() with a literal. */
export function specifiers(code: string): string[] {
  const out: string[] = [];
  for (const m of code.matchAll(/\b(?:from|import)\s*\(?\s*(['"])([^'"\n]+)\1/g)) {
    // What reads like an import inside a text (a template's `${...}`, a sentence with spaces) names no module.
    if (/^[.\/@\w][^\s$`]*$/.test(m[2])) out.push(m[2]);
  }
  return out;
}

/** A bare specifier's package name and subpath ('@intab/gpu/reference' -> ['@intab/gpu', './reference']), or undefined for what is no package (node builtins, virtual modules, paths, URLs). */
export function packageOf(spec: string): { name: string; subpath: string } | undefined {
  const clean = spec.replace(/[?#].*$/, '');
  if (/^(\.|\/|[a-z]+:)/.test(clean) || builtinModules.includes(clean.split('/')[0])) return undefined;
  const parts = clean.split('/');
  const n = clean.startsWith('@') ? 2 : 1;
  const rest = parts.slice(n).join('/');
  return { name: parts.slice(0, n).join('/'), subpath: rest ? `./${rest}` : '.' };
}

// ---- the workspace ----

export interface PackageJson {
  name: string;
  private?: boolean;
  exports?: Record<string, string | Record<string, string>>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

export interface WorkspacePackage {
  /** Its folder, relative to the repository root: 'packages/gpu'. */
  dir: string;
  json: PackageJson;
}

export interface Workspace {
  packages: readonly WorkspacePackage[];
  /** Every source file of every package, by path relative to the repository root. */
  files: ReadonlyMap<string, string>;
  /** The root package.json's devDependencies: the toolchain tests and tooling may use besides their package's own. */
  rootDevDependencies: readonly string[];
}

export type ViolationKind = 'relative' | 'undeclared' | 'not-exported' | 'layer' | 'test-only' | 'unknown-package' | 'testing-dependency';

export interface Violation {
  kind: ViolationKind;
  file: string;
  specifier: string;
  message: string;
}

const declared = (json: PackageJson) => new Set([...Object.keys(json.dependencies ?? {}), ...Object.keys(json.devDependencies ?? {}), ...Object.keys(json.peerDependencies ?? {})]);

/** The file an export of a package stands for (a conditions object by the repository's convention: ./dist/<name>.js is ./src/<name>.ts). */
export function exportTarget(pkg: WorkspacePackage, subpath: string): string | undefined {
  const target = pkg.json.exports?.[subpath];
  if (target === undefined) return undefined;
  if (typeof target === 'string') return posix.join(pkg.dir, target);
  const dist = /^\.\/dist\/(.+)\.js$/.exec(target.import ?? target.default ?? '');
  return dist ? posix.join(pkg.dir, 'src', `${dist[1]}.ts`) : undefined;
}

const layerOf = (name: string) => LAYERS.findIndex((layer) => layer.includes(name));

/** Whether package `from` may import package `to` (neither being @intab/testing). */
export function mayImport(from: string, to: string): boolean {
  if (EXTRA_IMPORTS[from]?.includes(to)) return true;
  if (from === TESTING) return layerOf(to) >= 0 && to !== '@intab/cli';
  const a = layerOf(from);
  const b = layerOf(to);
  return a >= 0 && b >= 0 && b < a;
}

/** Every border crossed wrongly in `ws`. */
export function violations(ws: Workspace): Violation[] {
  const out: Violation[] = [];
  const byName = new Map(ws.packages.map((p) => [p.json.name, p]));
  const dirs = [...ws.packages].sort((a, b) => b.dir.length - a.dir.length);
  const owner = (path: string) => dirs.find((p) => path.startsWith(`${p.dir}/`));
  const known = (name: string) => byName.has(name) || layerOf(name) >= 0 || name in EXTRA_IMPORTS || name === TESTING;

  for (const pkg of ws.packages) {
    const { name } = pkg.json;
    if (!known(name)) out.push({ kind: 'unknown-package', file: `${pkg.dir}/package.json`, specifier: name, message: `${name} is in no layer: place it in scripts/layering.ts's LAYERS or EXTRA_IMPORTS` });
    for (const field of ['dependencies', 'peerDependencies'] as const) {
      if (pkg.json[field]?.[TESTING] !== undefined) out.push({ kind: 'testing-dependency', file: `${pkg.dir}/package.json`, specifier: TESTING, message: `${name} lists ${TESTING} in ${field}: it is test tooling, a devDependency` });
    }
  }
  const testing = byName.get(TESTING);
  if (testing && testing.json.private !== true) out.push({ kind: 'testing-dependency', file: `${testing.dir}/package.json`, specifier: TESTING, message: `${TESTING} must be private: it is never published` });

  for (const [file, code] of ws.files) {
    const pkg = owner(file);
    if (!pkg) continue;
    const from = pkg.json.name;
    const production = !isTooling(file);
    const add = (kind: ViolationKind, specifier: string, message: string) => out.push({ kind, file, specifier, message });
    for (const spec of specifiers(code)) {
      // A relative import: it stays in its package (the WGSL of shaders/ is @intab/gpu's; a build config may read scripts/).
      if (spec.startsWith('.')) {
        const target = posix.normalize(posix.join(posix.dirname(file), spec.replace(/[?#].*$/, '')));
        const inside = target.startsWith(`${pkg.dir}/`);
        const shader = from === '@intab/gpu' && target.startsWith('shaders/') && /\.wgsl\?raw$/.test(spec);
        const configScript = isPackageConfig(file) && target.startsWith('scripts/');
        if (!inside && !shader && !configScript) add('relative', spec, `a relative import leaves ${pkg.dir} (to ${target}): import the other package by its name and exports, or move the shared code into it`);
        else if (inside && production && isTestOnly(target)) add('test-only', spec, `production code imports the test-only ${target}: move what production needs out of it`);
        continue;
      }
      const p = packageOf(spec);
      if (!p) continue;
      const target = byName.get(p.name);
      if (!target) {
        if (p.name === 'intab' || p.name.startsWith('@intab/')) add('unknown-package', spec, `${p.name} is no package of this workspace`);
        else if (!declared(pkg.json).has(p.name) && (production || !ws.rootDevDependencies.includes(p.name))) {
          add('undeclared', spec, `${from} imports ${p.name} without declaring it: \`pnpm add ${p.name} --filter ${from}\`${production ? '' : " (tests may also use the root's devDependencies)"}`);
        }
        continue;
      }
      // A workspace package, itself included: by its exports only.
      const resolved = exportTarget(target, p.subpath);
      if (resolved === undefined) {
        add('not-exported', spec, `${p.name} exports no '${p.subpath}': import what its package.json exports, or export it there`);
        continue;
      }
      if (p.name === from) {
        if (production && isTestOnly(resolved)) add('test-only', spec, `production code imports the test-only ${spec} (${resolved}): move what production needs out of it`);
        continue;
      }
      if (!declared(pkg.json).has(p.name)) add('undeclared', spec, `${from} imports ${p.name} without declaring it: add "${p.name}": "workspace:*" to ${pkg.dir}/package.json`);
      if (p.name === TESTING) {
        if (production) add('test-only', spec, `production code imports ${TESTING}: only tests and tooling may (move what production needs into a library package)`);
      } else if (!mayImport(from, p.name)) {
        add('layer', spec, `${from} may not import ${p.name}: imports point down the layers (scripts/layering.ts's LAYERS)`);
      } else if (production && isTestOnly(resolved)) {
        add('test-only', spec, `production code imports the test-only ${spec} (${resolved}): move what production needs out of it`);
      }
    }
  }
  return out;
}
