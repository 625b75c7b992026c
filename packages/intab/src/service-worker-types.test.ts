// The README's Service Worker file (its ```ts block that imports 'intab/service-worker') type-checks as a user's
// project compiles it: tsc (the repository's TypeScript) over an app in a temp folder with `intab` in its node_modules,
// strict, once with a Service Worker's lib (ES2023 + WebWorker, where `self` is a WorkerGlobalScope) and once with a
// page's (ES2023 + DOM, where it is a Window), as issue 29 found the snippet failing with TS2741 in both. Also the
// usual `declare const self: ServiceWorkerGlobalScope`, and, so that the check is not vacuous, a call that must fail.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);
let app: string;

/** The README's block that imports intab/service-worker: the file a user copies into src/sw.ts. */
function readmeServiceWorker(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]).filter((b) => b.includes("from 'intab/service-worker'"));
  expect(blocks, 'README.md has one ```ts block that imports intab/service-worker').toHaveLength(1);
  return blocks[0];
}

/** tsc over `files` (name → source) in the temp app with `lib`; its diagnostics ('' when it compiles). */
async function typecheck(lib: string[], files: Record<string, string>): Promise<string> {
  const dir = mkdtempSync(join(app, 'project-'));
  mkdirSync(join(dir, 'src'));
  for (const [name, code] of Object.entries(files)) writeFileSync(join(dir, 'src', name), code);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', lib, strict: true, noEmit: true, skipLibCheck: false, types: [],
      // `intab` from its sources, as tsconfig.json's paths take it; the published package's dist/ types are the same files.
      paths: { 'intab/*': [join(ROOT, 'packages/intab/src/*.ts')] },
    },
    include: ['src'],
  }));
  try {
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json')], { cwd: dir, timeout: 120_000 });
    return '';
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    return `${err.stdout ?? ''}${err.stderr ?? ''}` || err.message;
  }
}

const WORKER_LIB = ['ES2023', 'WebWorker'];
const PAGE_LIB = ['ES2023', 'DOM', 'DOM.Iterable'];

beforeAll(() => {
  app = mkdtempSync(join(tmpdir(), 'intab-sw-types-'));
  mkdirSync(join(app, 'node_modules'));
  symlinkSync(PACKAGE, join(app, 'node_modules', 'intab'), 'dir');
});

afterAll(() => {
  if (app) rmSync(app, { recursive: true, force: true });
});

describe("the README's Service Worker file under strict tsc", () => {
  test('with a Service Worker\'s lib (WebWorker) and with a page\'s (DOM)', async () => {
    const sw = readmeServiceWorker();
    expect(sw).toMatch(/relayOpenAI\(self\)/);
    expect(await typecheck(WORKER_LIB, { 'sw.ts': sw })).toBe('');
    expect(await typecheck(PAGE_LIB, { 'sw.ts': sw })).toBe('');
  });

  test('with self declared a ServiceWorkerGlobalScope, options given; a scope of the wrong shape is refused', async () => {
    const declared = "import { relayOpenAI } from 'intab/service-worker';\ndeclare const self: ServiceWorkerGlobalScope;\nrelayOpenAI(self, { openHint: 'the chat page' });\nrelayOpenAI();\n";
    expect(await typecheck(WORKER_LIB, { 'sw.ts': declared })).toBe('');
    const wrong = "import { relayOpenAI } from 'intab/service-worker';\nrelayOpenAI({ clients: 1 });\n";
    for (const lib of [WORKER_LIB, PAGE_LIB]) expect(await typecheck(lib, { 'sw.ts': wrong })).toMatch(/error TS23\d\d: /);
  });
});
