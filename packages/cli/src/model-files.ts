// Serves a model's local files to the headless page, same origin as the page, with HTTP Range support
// (the page reads weights with range requests, as it would from a model hub). A model is a .gguf file
// (plus its -0000N-of-0000M splits), a Hugging Face folder, or an ONNX folder (config.json and onnx/model*.onnx).
import { createReadStream, existsSync, readdirSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basename, dirname, join, resolve } from 'node:path';

/** A model as the page and the Node runtime get it: its kind, its folder on disk (none for a URL), its files' URLs. */
export interface ResolvedModel {
  kind: 'gguf' | 'hf';
  dir?: string;
  files: string[];
  urls: string[];
}

export const MODEL_PREFIX = '/__intab_model/';
/** A draft model (speculative decoding) is served beside the target, under its own prefix. */
export const DRAFT_PREFIX = '/__intab_draft/';
/** The ONNX folder `intab bench compare` writes for the peers, under its own prefix. */
export const ONNX_PREFIX = '/__intab_onnx/';

/**
 * Describe the model at `spec` (a path or URL) for the page: its kind and file URLs. `o`: the URL prefix its files are
 * served under, and the flag that named it (for messages) [MODEL_PREFIX, 'model'].
 */
export function resolveModel(spec: string, o: { prefix?: string; flag?: string } = {}): ResolvedModel {
  const prefix = o.prefix ?? MODEL_PREFIX;
  const flag = `--${o.flag ?? 'model'}`;
  if (/^https?:\/\//.test(spec)) {
    return spec.endsWith('.gguf')
      ? { kind: 'gguf', files: [spec], urls: [spec] }
      : { kind: 'hf', files: ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json'], urls: [spec.replace(/\/?$/, '/')] };
  }
  const path = resolve(spec);
  if (!existsSync(path)) throw new Error(`${flag} ${spec}: no such file or folder`);
  if (statSync(path).isDirectory()) {
    const files = readdirSync(path).filter((f) => /\.(json|safetensors)$/.test(f));
    if (!files.includes('config.json')) throw new Error(`${flag} ${spec}: a Hugging Face folder needs config.json`);
    // An ONNX folder (onnx-community layout): its graphs and their external data under onnx/, served as they lie.
    const onnxDir = join(path, 'onnx');
    if (!files.some((f) => f.endsWith('.safetensors')) && existsSync(onnxDir) && statSync(onnxDir).isDirectory()) {
      files.push(...readdirSync(onnxDir).filter((f) => /\.onnx(_data.*|\.data)?$/.test(f)).map((f) => `onnx/${f}`));
    }
    return { kind: 'hf', dir: path, files, urls: files.map((f) => prefix + f.split('/').map(encodeURIComponent).join('/')) };
  }
  if (!path.endsWith('.gguf')) throw new Error(`${flag} ${spec}: expected a .gguf file, a Hugging Face folder or a URL`);
  const m = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/.exec(basename(path));
  const files = m
    ? Array.from({ length: Number(m[3]) }, (_, i) => `${m[1]}-${String(i + 1).padStart(5, '0')}-of-${m[3]}.gguf`)
    : [basename(path)];
  return { kind: 'gguf', dir: dirname(path), files, urls: files.map((f) => prefix + encodeURIComponent(f)) };
}

/** A Connect middleware serving files of `dir` under `prefix` with Range support. */
export function modelFilesMiddleware(dir: string, prefix = MODEL_PREFIX): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  return (req, res, next) => {
    if (!req.url?.startsWith(prefix)) return next();
    const name = req.url.slice(prefix.length).split('?')[0].split('/').map(decodeURIComponent).join('/');
    const path = join(dir, name);
    // One level of subfolder at most (an ONNX folder's onnx/), and never out of `dir`.
    const parts = name.split('/');
    if (parts.length > 2 || parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\\')) || !existsSync(path) || !statSync(path).isFile()) {
      res.statusCode = 404;
      return res.end('not found');
    }
    const size = statSync(path).size;
    res.setHeader('Accept-Ranges', 'bytes');
    res.setHeader('Content-Type', 'application/octet-stream');
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (!range) {
      res.setHeader('Content-Length', size);
      if (req.method === 'HEAD') return res.end();
      return createReadStream(path).pipe(res);
    }
    const start = Number(range[1]);
    const end = Math.min(range[2] ? Number(range[2]) : size - 1, size - 1);
    if (start >= size || end < start) {
      res.statusCode = 416;
      res.setHeader('Content-Range', `bytes */${size}`);
      return res.end();
    }
    res.statusCode = 206;
    res.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
    res.setHeader('Content-Length', end - start + 1);
    if (req.method === 'HEAD') return res.end();
    createReadStream(path, { start, end }).pipe(res);
  };
}
