// A fresh app outside the workspace, as a new user makes one: `intab` packed into a tarball as npm publishes it,
// installed from that tarball with Vite from the registry, then served by Vite's dev server or built and served by
// `vite preview`. Shared by the e2e specs that must see the package as its users do (packaging, first-hour), so
// nothing resolves through the monorepo.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const PACKAGE = join(ROOT, 'packages', 'intab');
const run = promisify(execFile);

/** Runs a command; its failure says what ran where, with its output. */
export async function sh(cmd: string, args: string[], cwd: string, timeout = 180_000): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, { cwd, timeout, maxBuffer: 64 << 20 });
    return stdout;
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`\`${cmd} ${args.join(' ')}\` failed in ${cwd}:\n${err.stdout ?? ''}\n${err.stderr ?? err.message}`);
  }
}

export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => ok(port));
    });
  });
}

/** Waits until `url` answers 2xx, or fails with the server's output when it exits or never answers. */
export async function waitForHttp(url: string, child: ChildProcess, log: () => string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}):\n${log()}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the server never answered at ${url}:\n${log()}`);
}

/** `npm pack` of packages/intab into `dir` (its prepack builds dist/ first); the tarball's path. */
export async function packIntab(dir: string): Promise<string> {
  await sh('npm', ['pack', '--pack-destination', dir, '--loglevel=error'], PACKAGE);
  const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack wrote no tarball into ${dir}`);
  return join(dir, tarball);
}

/** The app's own Vite, as its scripts would run it. */
export const viteBin = (app: string) => join(app, 'node_modules', 'vite', 'bin', 'vite.js');

export interface Served {
  origin: string;
  /** What the server printed so far. */
  log(): string;
  close(): void;
}

/** `vite build` of the app into its dist/. */
export async function buildApp(app: string): Promise<void> {
  await sh(process.execPath, [viteBin(app), 'build', '--logLevel', 'warn'], app);
}

/**
 * Serves `app` as its developer does: 'dev' is `vite` (the dev server), 'preview' is `vite preview` of what buildApp built.
 * @example
 * const server = await serveApp(app, 'dev');
 * await page.goto(server.origin + '/');
 */
export async function serveApp(app: string, mode: 'dev' | 'preview'): Promise<Served> {
  const port = await freePort();
  let out = '';
  const args = mode === 'dev' ? [viteBin(app), '--host', '127.0.0.1', '--port', String(port), '--strictPort'] : [viteBin(app), 'preview', '--host', '127.0.0.1', '--port', String(port), '--strictPort'];
  const child = spawn(process.execPath, args, { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const origin = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${origin}/`, child, () => out);
  } catch (err) {
    child.kill();
    throw err;
  }
  return { origin, log: () => out, close: () => void child.kill() };
}
