// `intab serve` as its own process, started the way a user starts it (bin/intab.mjs, the built CLI), for what talks to
// a real server from outside it: the TLS test, which signals the process, and e2e/remote.spec.ts, whose test runner
// (Playwright's loader, not Vite) cannot load the server's modules itself. startServeProcess resolves once the server
// printed its listening line.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './repo.ts';
import type { ServerStats } from './serve-core.ts';

/** The line `intab serve` prints on stdout once it listens. */
export interface ListeningLine {
  serve: 'listening';
  url: string;
  ws: string;
  model: string;
  /** Where the engine runs: 'node' (this process) or 'chromium'. */
  runtime: 'node' | 'chromium';
  backend: string;
  /** Why that backend runs it (on runtime node: what Dawn gave, or why it gave nothing). */
  backend_reason: string;
  adapter: string;
  api_keys: number;
  /** Milliseconds from the process's start to listening (the model loaded and warmed up). */
  ready_ms: number;
}

/** A running `intab serve` process. */
export interface ServeProcess {
  line: ListeningLine;
  /** http(s)://host:port, as the listening line says. */
  url: string;
  /** ws(s)://host:port/v1/realtime-text */
  wsUrl: string;
  model: string;
  proc: ChildProcess;
  /** Everything it wrote on stderr so far (progress, one line per request, drain messages). */
  stderr: () => string;
  /** Its exit code (null when a signal ended it). */
  exited: Promise<number | null>;
  /** GET /v1/stats of a plaintext server (`apiKey` when it has keys). */
  stats: (apiKey?: string) => Promise<ServerStats>;
  /** SIGTERM (it drains for --grace-ms, then exits), then its exit code; SIGKILL if it is still there after `killAfterMs`. */
  close: (killAfterMs?: number) => Promise<number | null>;
}

/**
 * Starts `intab serve ARGS` (e.g. `['--model', file, '--port', '0']`) and waits for its listening line.
 * @example
 * const server = await startServeProcess(['--model', 'stories260K-vocab-ud.gguf', '--port', '0', '--cors', '*']);
 * const r = await fetch(`${server.url}/v1/models`);
 * await server.close();
 */
export async function startServeProcess(args: string[], o: { startMs?: number } = {}): Promise<ServeProcess> {
  const proc = spawn(process.execPath, [join(ROOT, 'packages/cli/bin/intab.mjs'), 'serve', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const startMs = o.startMs ?? 300_000;
  let line: ListeningLine;
  try {
    line = await new Promise<ListeningLine>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`intab serve did not listen within ${startMs / 1000} s: ${stderr.trim().slice(-600)}`)), startMs);
      proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const first = out.split('\n').find((l) => l.includes('"serve":"listening"'));
        if (first) {
          clearTimeout(timer);
          resolve(JSON.parse(first) as ListeningLine);
        }
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`intab serve exited ${code} before it listened: ${stderr.trim().slice(-600)}`));
      });
    });
  } catch (err) {
    proc.kill('SIGKILL');
    throw err;
  }
  return {
    line,
    url: line.url,
    wsUrl: line.ws,
    model: line.model,
    proc,
    stderr: () => stderr,
    exited,
    async stats(apiKey) {
      const r = await fetch(`${line.url}/v1/stats`, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
      if (!r.ok) throw new Error(`GET /v1/stats answered ${r.status}: ${await r.text()}`);
      return (await r.json()) as ServerStats;
    },
    async close(killAfterMs = 30_000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return exited;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), killAfterMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
