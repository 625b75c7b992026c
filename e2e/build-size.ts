// Deploy size of a production build: every file it emits, with its size, held against the 25 MiB (26,214,400 bytes)
// per file that common static hosts accept (Cloudflare Pages refuses a bigger asset). e2e/packaging.spec.ts runs it on
// the fresh app's `vite build`, so an import that reaches a bigger onnxruntime-web build (its asyncify wasm is
// 26.8 MB; intab loads the JSPI one, see packages/onnx/src/session.ts) or any other oversized file fails the suite.
import { readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/** The largest file a build may emit: 25 MiB. */
export const MAX_FILE_BYTES = 25 * 1024 * 1024;

export interface BuildFile {
  /** Path under the build folder, '/'-separated ('assets/ort-wasm-simd-threaded.jspi-xxxx.wasm'). */
  file: string;
  bytes: number;
}

export interface BuildSize {
  largest: BuildFile;
  totalBytes: number;
  /** Every file, largest first. */
  files: BuildFile[];
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
}

/**
 * Lists every file under `distDir` with its size; throws naming each file over `maxBytes` (25 MiB).
 * @example
 * const { largest, totalBytes } = assertDeployable(join(app, 'dist'));
 */
export function assertDeployable(distDir: string, maxBytes = MAX_FILE_BYTES): BuildSize {
  const files = walk(distDir)
    .map((path) => ({ file: relative(distDir, path).split(sep).join('/'), bytes: statSync(path).size }))
    .sort((a, b) => b.bytes - a.bytes || a.file.localeCompare(b.file));
  if (files.length === 0) throw new Error(`${distDir}: the build emitted no files`);
  const over = files.filter((f) => f.bytes > maxBytes);
  if (over.length) {
    throw new Error(
      `${distDir}: ${over.length} file${over.length === 1 ? '' : 's'} over ${maxBytes.toLocaleString('en')} bytes, which common static hosts refuse: ` +
        `${over.map((f) => `${f.file} (${f.bytes.toLocaleString('en')} bytes)`).join(', ')}. ` +
        "Find the import that reaches it (an onnxruntime-web wasm comes from the build packages/onnx/src/session.ts's loadOrt imports: never 'onnxruntime-web/webgpu', whose asyncify wasm is 26.8 MB), or serve it from elsewhere.",
    );
  }
  return { largest: files[0], totalBytes: files.reduce((n, f) => n + f.bytes, 0), files };
}
