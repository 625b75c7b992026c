// A local HTTP server that behaves like a model hub, for the model store's tests and the e2e specs (on loopback, never
// a mock of fetch): `/<org>/<name>/resolve/<rev>/<file>` serves the files of a few repositories (subfolders included)
// with HTTP Range support and CORS, and `/api/models/<org>/<name>/tree/<rev>[/<path>]` lists them with sizes and LFS
// SHA-256, as huggingface.co does (intab's one hub client asks nothing else). Query flags make it misbehave the way
// real servers do:
//   cut=N      close the connection after N bytes of the body (once per `tag`, so the resume succeeds)
//   html=1     answer 200 with an HTML page (a login or error page)
//   corrupt=1  flip one byte of the file (the hub's hash no longer matches)
//   short=N    send N bytes less than the Content-Length announced, then end the response
//   pad=N      append N bytes (the length differs from the listing)
//   as=FILE    serve another file of the repository under this name (a wrong file)
//   slow=N     send N bytes every 20 ms (a slow network)
// A repository may also be virtual: listed with the sizes given (a model too large for the test origin's quota) and
// serving nothing. Beside the hub's paths, the same files are served as a plain static host does, with nothing to
// list them (`/plain/<org>/<name>/<file>`), and whole paths misbehave the way hosts do:
//   /fail/<status>/...   answers every request with that HTTP status (a server error, a gated file)
//   /html/...            answers every request with an HTML page, as a dev server's fallback (Vite's index.html)
// `/__requests` counts the requests per path (Range requests apart); `/__failures` lists the answers with a status of
// 400 or more (what the browser's console shows as red lines), as 'STATUS METHOD path'; `/__reset` clears both.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/** A running hub: its origin, and how to stop it. */
export interface HubServer {
  url: string;
  close(): Promise<void>;
}

/**
 * Starts the hub on a free loopback port.
 * @param repos  repository id (org/name) → folder whose files it serves
 * @param virtual  repository id → files it lists but cannot serve
 * @example
 * const hub = await startHubServer({ 'test/stories': '/path/to/stories260K' });
 * await fetch(`${hub.url}/test/stories/resolve/main/stories260K.gguf`);
 */
export async function startHubServer(repos: Record<string, string>, virtual: Record<string, { path: string; size: number }[]> = {}): Promise<HubServer> {
  const cache = new Map<string, Buffer>();
  const fileOf = (repo: string, name: string): Buffer | undefined => {
    const dir = repos[repo];
    if (!dir || name.split('/').some((part) => part === '' || part === '.' || part === '..')) return undefined;
    const path = join(dir, name);
    try {
      if (!statSync(path).isFile()) return undefined;
    } catch {
      return undefined;
    }
    if (!cache.has(path)) cache.set(path, readFileSync(path));
    return cache.get(path);
  };
  const counts: Record<string, number> = {};
  const failures: string[] = [];
  const cut = new Set<string>();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Headers', 'Range');
    res.setHeader('Access-Control-Expose-Headers', 'Content-Range, Content-Length, Accept-Ranges, Content-Type');
    if (req.method === 'OPTIONS') return res.writeHead(204).end();
    if (url.pathname === '/__requests') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(counts));
    if (url.pathname === '/__failures') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(failures));
    if (url.pathname === '/__reset') {
      for (const k of Object.keys(counts)) delete counts[k];
      failures.length = 0;
      return res.writeHead(204).end();
    }
    res.on('finish', () => {
      if (res.statusCode >= 400) failures.push(`${res.statusCode} ${req.method} ${url.pathname}`);
    });
    const misbehave = /^\/(fail\/(\d{3})|html)\//.exec(url.pathname);
    if (misbehave) {
      const key = `${req.method} ${url.pathname}${req.headers.range ? ' range' : ''}`;
      counts[key] = (counts[key] ?? 0) + 1;
      if (misbehave[2]) return res.writeHead(Number(misbehave[2]), { 'content-type': 'text/plain' }).end(`HTTP ${misbehave[2]}`);
      return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><html><body><div id="app"></div></body></html>');
    }
    // The repository's files, subfolders included (onnx/model.onnx), as paths relative to its folder.
    const listFiles = (repo: string): string[] => {
      const dir = repos[repo];
      const walk = (sub: string): string[] => readdirSync(join(dir, sub), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(`${sub}${e.name}/`) : [`${sub}${e.name}`]));
      return walk('').filter((name) => fileOf(repo, name));
    };
    // The tree API: every file under the path (the `recursive=true` listing; this server always lists every level).
    const tree = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)(?:\/(.+?))?\/?$/.exec(url.pathname);
    if (tree) {
      const listed = virtual[decodeURIComponent(tree[1])];
      if (listed) return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(listed.map((f) => ({ type: 'file', path: f.path, size: f.size, lfs: { oid: '0'.repeat(64), size: f.size } }))));
      const dir = repos[decodeURIComponent(tree[1])];
      if (!dir) return res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Repository not found"}');
      const under = tree[3] ? `${decodeURIComponent(tree[3])}/` : '';
      const entries = listFiles(decodeURIComponent(tree[1])).filter((name) => name.startsWith(under)).map((name) => {
        const data = fileOf(decodeURIComponent(tree[1]), name)!;
        const lfs = /\.(gguf|safetensors|onnx|onnx_data)$/.test(name);
        return { type: 'file', path: name, size: data.length, ...(lfs ? { lfs: { oid: createHash('sha256').update(data).digest('hex'), size: data.length } } : { oid: createHash('sha1').update(data).digest('hex') }) };
      });
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(entries));
    }
    // A hub file (`/org/name/resolve/rev/file`), or the same file on a plain static host (`/plain/org/name/file`).
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname) ?? /^\/plain\/([^/]+\/[^/]+)\/()(.+)$/.exec(url.pathname);
    if (!resolve) return res.writeHead(404).end('not found');
    const key = `${req.method} ${url.pathname}${req.headers.range ? ' range' : ''}`;
    counts[key] = (counts[key] ?? 0) + 1;
    if (url.searchParams.get('html')) return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><html><body>Sign in to continue</body></html>');
    let data = fileOf(decodeURIComponent(resolve[1]), url.searchParams.get('as') ?? decodeURIComponent(resolve[3]));
    if (!data) return res.writeHead(404, { 'content-type': 'text/plain' }).end('Entry not found');
    if (url.searchParams.get('corrupt')) {
      data = Buffer.from(data);
      data[data.length >> 1] ^= 0xff;
    }
    const pad = Number(url.searchParams.get('pad') ?? 0);
    if (pad > 0) data = Buffer.concat([data, Buffer.alloc(pad)]);
    const size = data.length;
    const headers = { 'content-type': 'application/octet-stream', 'accept-ranges': 'bytes' };
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    let start = 0;
    let end = size - 1;
    if (range) {
      start = Number(range[1]);
      end = range[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
      if (start >= size) return res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
      res.writeHead(206, { ...headers, 'content-range': `bytes ${start}-${end}/${size}`, 'content-length': end - start + 1 });
    } else res.writeHead(200, { ...headers, 'content-length': size });
    if (req.method === 'HEAD') return res.end();
    let body = data.subarray(start, end + 1);
    const short = Number(url.searchParams.get('short') ?? 0);
    if (short > 0) {
      res.write(body.subarray(0, Math.max(0, body.length - short)));
      return res.destroy();
    }
    const cutAt = Number(url.searchParams.get('cut') ?? 0);
    const tag = `${url.pathname}|${url.searchParams.get('tag')}|${cutAt}`;
    if (cutAt > 0 && start < cutAt && !cut.has(tag)) {
      cut.add(tag);
      // Part of the body, then the connection drops.
      res.write(body.subarray(0, cutAt - start), () => setTimeout(() => res.destroy(), 20));
      return;
    }
    const slow = Number(url.searchParams.get('slow') ?? 0);
    if (slow > 0) {
      const timer = setInterval(() => {
        if (res.destroyed) return clearInterval(timer);
        const piece = body.subarray(0, slow);
        body = body.subarray(slow);
        if (body.length === 0) {
          clearInterval(timer);
          res.end(piece);
        } else res.write(piece);
      }, 20);
      res.on('close', () => clearInterval(timer));
      return;
    }
    res.end(body);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', () => r(undefined)));
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
