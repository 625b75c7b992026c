// serviceWorker() from 'intab/vite' on a tiny app in a temp folder (index.html, src/main.ts registering '/sw.js',
// src/sw.ts calling relayOpenAI from 'intab/service-worker', which resolves through the app's node_modules as an
// installed package does): Vite's build() emits sw.js at the output's root, unhashed, and `vite preview` serves it;
// createServer() serves /sw.js bundled from the TypeScript on request, with no-cache, and again after an edit; a
// syntax error is a 500 that names the file, and the next good edit is served. Each script is checked for what it
// must be: a classic script (compiled as one, where an import would not parse) that, run in a Service Worker's
// stand-in scope, answers /v1 requests with intab's relay (a 503 naming the page to open, with no engine page).
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { build, createServer, preview, type InlineConfig } from 'vite';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { IntabError } from '@intab/errors';
import { InvalidPluginOptionError, serviceWorker } from './vite.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** How this repository resolves intab's specifiers to its sources (scripts/intab-source.ts, given by vite.config.ts). */
    intabSourceAliases: { find: string; replacement: string }[];
  }
}

const PACKAGE = fileURLToPath(new URL('..', import.meta.url));
const SW = (hint: string) => `import { relayOpenAI } from 'intab/service-worker';\nrelayOpenAI(self, { openHint: ${JSON.stringify(hint)} });\n`;
let app: string;

beforeAll(() => {
  app = mkdtempSync(join(tmpdir(), 'intab-vite-plugin-'));
  mkdirSync(join(app, 'src'));
  mkdirSync(join(app, 'node_modules'));
  // `intab` installed in the app: a link to this package, as a workspace or `npm link` would make it.
  symlinkSync(PACKAGE, join(app, 'node_modules', 'intab'), 'dir');
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'sw-app', private: true, type: 'module' }));
  writeFileSync(join(app, 'index.html'), '<!doctype html>\n<html><body><script type="module" src="/src/main.ts"></script></body></html>\n');
  writeFileSync(join(app, 'src', 'main.ts'), "await navigator.serviceWorker.register('/sw.js');\n");
  writeFileSync(join(app, 'src', 'sw.ts'), SW('the chat page'));
});

afterAll(() => {
  if (app) rmSync(app, { recursive: true, force: true });
});

/** The app's Vite config: intab from its sources, through the aliases this repository resolves it by. */
const config = (extra: InlineConfig = {}): InlineConfig => ({
  root: app,
  configFile: false,
  logLevel: 'silent',
  resolve: { alias: inject('intabSourceAliases').map((a) => ({ find: new RegExp(a.find), replacement: a.replacement })) },
  plugins: [serviceWorker({ entry: 'src/sw.ts' })],
  ...extra,
});

/**
 * Runs `code` as a classic script in a Service Worker's stand-in global scope and asks its fetch handler for
 * GET /v1/models, with no page open: intab's relay answers a 503 naming the page to open.
 */
async function relayOf(code: string): Promise<{ status: number; error: { code: string; message: string } }> {
  const listeners: ((event: unknown) => void)[] = [];
  const scope: Record<string, unknown> = {
    location: { origin: 'https://app.test', href: 'https://app.test/sw.js' },
    clients: { matchAll: async () => [], get: async () => undefined },
    addEventListener: (type: string, listener: (event: unknown) => void) => type === 'fetch' && listeners.push(listener),
    URL, Request, Response, Headers, MessageChannel, TextEncoder, TextDecoder, ReadableStream, setTimeout, clearTimeout, setInterval, clearInterval, console,
  };
  const context = vm.createContext(scope);
  scope.self = context;
  // A module (import/export) does not compile as a script: this is the check that it is a classic one.
  new vm.Script(code, { filename: 'sw.js' }).runInContext(context);
  expect(listeners).toHaveLength(1);
  let answer: Promise<Response> | undefined;
  listeners[0]({ request: new Request('https://app.test/v1/models'), clientId: '', respondWith: (r: Promise<Response>) => (answer = Promise.resolve(r)) });
  const res = await answer!;
  return { status: res.status, error: (await res.json()).error };
}

describe('serviceWorker() from intab/vite', () => {
  test('vite build emits sw.js at the root, unhashed, a classic script with intab\'s relay in it; vite preview serves it', async () => {
    const outDir = join(app, 'dist');
    await build(config({ build: { outDir, emptyOutDir: true } }));
    expect(readdirSync(outDir).sort()).toEqual(['assets', 'index.html', 'sw.js']);
    expect(readdirSync(join(outDir, 'assets')).some((f) => /^sw/.test(f))).toBe(false);
    const code = readFileSync(join(outDir, 'sw.js'), 'utf8');
    expect(code).not.toMatch(/^\s*(import|export)\b/m);
    expect(await relayOf(code)).toMatchObject({ status: 503, error: { code: 'no_engine', message: expect.stringMatching(/open the chat page/) } });
    // The page's one line, kept as written.
    const page = readdirSync(join(outDir, 'assets')).find((f) => f.endsWith('.js'))!;
    expect(readFileSync(join(outDir, 'assets', page), 'utf8')).toContain('/sw.js');

    const server = await preview(config({ build: { outDir }, preview: { port: 0, host: '127.0.0.1' } }));
    try {
      const { port } = server.httpServer.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/sw.js`);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(await res.text()).toBe(code);
    } finally {
      await server.close();
    }
  });

  test('vite dev serves /sw.js bundled from the TypeScript, with no-cache; an edit is served at the next request; a syntax error is a 500 naming the file', async () => {
    const server = await createServer(config({ server: { port: 0, host: '127.0.0.1', strictPort: false } }));
    await server.listen();
    try {
      const { port } = server.httpServer!.address() as AddressInfo;
      const url = `http://127.0.0.1:${port}/sw.js`;
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('service-worker-allowed')).toBe('/');
      const code = await res.text();
      // Dev: unminified, mapped; `intab/service-worker` resolved as the app resolves it (its alias to intab's sources).
      const map = JSON.parse(Buffer.from(/sourceMappingURL=data:application\/json;(?:charset=utf-8;)?base64,(\S+)/.exec(code)![1], 'base64').toString());
      expect(map.sources.some((s: string) => s.endsWith('src/sw.ts'))).toBe(true);
      expect(map.sources.some((s: string) => s.endsWith('packages/intab/src/service-worker.ts'))).toBe(true);
      expect(await relayOf(code)).toMatchObject({ status: 503, error: { code: 'no_engine', message: expect.stringMatching(/open the chat page/) } });
      // Asked again with nothing changed: the same bundle.
      expect(await (await fetch(url)).text()).toBe(code);

      writeFileSync(join(app, 'src', 'sw.ts'), SW('the edited page'));
      await expect.poll(async () => (await fetch(url)).text(), { timeout: 20_000 }).toContain('the edited page');
      expect((await relayOf(await (await fetch(url)).text())).error.message).toMatch(/open the edited page/);

      writeFileSync(join(app, 'src', 'sw.ts'), `${SW('x')}relayOpenAI(self, {\n`);
      await expect.poll(async () => (await fetch(url)).status, { timeout: 20_000 }).toBe(500);
      expect(await (await fetch(url)).text()).toMatch(/^src\/sw\.ts could not be bundled: /);

      writeFileSync(join(app, 'src', 'sw.ts'), SW('the chat page'));
      await expect.poll(async () => (await fetch(url)).status, { timeout: 20_000 }).toBe(200);
      // The page itself is still Vite's: only /sw.js is the plugin's.
      expect(await (await fetch(`http://127.0.0.1:${port}/src/main.ts`)).text()).toMatch(/navigator\.serviceWorker\.register\("\/sw\.js"\)/);
    } finally {
      writeFileSync(join(app, 'src', 'sw.ts'), SW('the chat page'));
      await server.close();
    }
  });

  test('a wrong option is an InvalidPluginOptionError that says what to write', async () => {
    const wrong: [unknown, string, RegExp][] = [
      [{}, 'entry', /serviceWorker\(\{ entry: 'src\/sw\.ts' \}\)/],
      [undefined, 'entry', /serviceWorker\(\{ entry: 'src\/sw\.ts' \}\)/],
      [{ entry: 'src/sw.ts', fileName: '/sw.js' }, 'fileName', /no leading '\/'/],
      [{ entry: 'src/sw.ts', fileName: '../sw.js' }, 'fileName', /no '\.\.'/],
      [{ entry: 'src/sw.ts', fileName: 'sw.ts' }, 'fileName', /ending in \.js/],
      [{ entry: 'src/sw.ts', plugins: {} }, 'plugins', /an array of Vite plugins/],
    ];
    for (const [options, option, message] of wrong) {
      let thrown: unknown;
      try {
        serviceWorker(options as Parameters<typeof serviceWorker>[0]);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(InvalidPluginOptionError);
      expect(thrown).toBeInstanceOf(IntabError);
      expect(thrown).toMatchObject({ name: 'InvalidPluginOptionError', code: 'invalid_plugin_option', caller: 'serviceWorker', option, message: expect.stringMatching(message) });
    }
    // An entry that is not there: named, with the root it was looked for under.
    const missing = createServer(config({ plugins: [serviceWorker({ entry: 'src/service-worker.ts' })] }));
    await expect(missing).rejects.toThrow(InvalidPluginOptionError);
    await expect(missing).rejects.toThrow(/there is no file .*src\/service-worker\.ts: give the path of your Service Worker's source, relative to the Vite root/);
    expect(existsSync(join(app, 'src', 'service-worker.ts'))).toBe(false);
  });
});
