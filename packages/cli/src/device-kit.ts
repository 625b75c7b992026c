// `intab device-kit --out DIR`: a folder (at most 48 MiB) that runs intab's kernel checks and benchmarks on a bare
// x86-64 Linux with an NVIDIA GPU and no network: this Node binary and Dawn's dawn.node compressed, the Node runtime in
// one file (intab-node.mjs: its make-model, bench kernels, bench decode and the kit's driver, node/kit-run.ts), a
// Vulkan loader where this machine has one to carry, and run.sh (packages/cli/kit/run.sh), which unpacks them with
// gzip (or xz), finds the NVIDIA Vulkan driver and runs the driver. The same kit runs here on Dawn's OpenGL backend.

import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, closeSync, copyFileSync, createReadStream, createWriteStream, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { Flags } from './args.ts';
import { builtNodeRuntime, BUNDLE_NAME, dawnNodePath } from './node-runtime.ts';
import { ROOT } from './repo.ts';

/** The most a kit may weigh: what a GPU loan's upload takes. */
export const KIT_MAX_BYTES = 48 * 2 ** 20;
export const KIT_COMPRESSIONS = ['gzip', 'xz'] as const;
type Compression = (typeof KIT_COMPRESSIONS)[number];

export type DeviceKitErrorReason = 'bad-flag' | 'not-a-kit' | 'not-linux-x64' | 'no-compressor' | 'too-large';

/** A kit that cannot be written as asked; the message says what to do. */
export class DeviceKitError extends Error {
  override name = 'DeviceKitError';
  constructor(
    readonly reason: DeviceKitErrorReason,
    message: string,
  ) {
    super(message);
  }
}

/** Whether `file` is an ELF shared object or executable for x86-64 (what the kit's target runs). */
function isElfX64(file: string): boolean {
  const head = Buffer.alloc(20);
  const fd = openSync(file, 'r');
  try {
    if (readSync(fd, head, 0, 20, 0) < 20) return false;
  } finally {
    closeSync(fd);
  }
  // \x7fELF, 64-bit (EI_CLASS 2), little-endian (EI_DATA 1), e_machine 62 (EM_X86_64)
  return head.readUInt32BE(0) === 0x7f454c46 && head[4] === 2 && head[5] === 1 && head.readUInt16LE(18) === 62;
}

/**
 * A Vulkan loader (libvulkan.so.1) to carry, for a GPU machine whose driver came without it: this system's, else the
 * one Chromium ships (Debian's chromium package, Playwright's build), which links only libc.
 */
export function findVulkanLoader(): string | undefined {
  const candidates: string[] = [];
  try {
    const cache = execFileSync('ldconfig', ['-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    for (const m of cache.matchAll(/libvulkan\.so\.1 \(libc6,x86-64\) => (\S+)/g)) candidates.push(m[1]);
  } catch {
    // no ldconfig here: the usual places below
  }
  candidates.push('/usr/lib/x86_64-linux-gnu/libvulkan.so.1', '/usr/lib64/libvulkan.so.1', '/usr/lib/chromium/libvulkan.so.1', '/usr/lib/chromium-browser/libvulkan.so.1');
  const playwright = process.env.PLAYWRIGHT_BROWSERS_PATH || join(homedir(), '.cache', 'ms-playwright');
  if (existsSync(playwright)) {
    for (const browser of readdirSync(playwright).filter((d) => d.startsWith('chromium')).sort().reverse()) {
      for (const sub of ['chrome-linux', 'chrome-linux64']) candidates.push(join(playwright, browser, sub, 'libvulkan.so.1'));
    }
  }
  return candidates.find((f) => existsSync(f) && isElfX64(realpathSync(f)));
}

/** Compresses `from` into `to` (gzip -6 in Node's zlib: level 9 takes three times as long for 0.4% less; xz -9 through the xz command); resolves with to's size. */
async function compress(from: string, to: string, how: Compression): Promise<number> {
  if (how === 'gzip') {
    await pipeline(createReadStream(from), createGzip({ level: 6 }), createWriteStream(to));
  } else {
    const xz = spawn('xz', ['-9', '-T0', '-c', from], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    xz.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<void>((done, fail) => {
      xz.on('error', (cause) => fail(new DeviceKitError('no-compressor', `--compress xz runs the xz command, which failed to start (${cause.message}): install xz-utils, or use --compress gzip`)));
      xz.on('close', (code) => (code === 0 ? done() : fail(new Error(`xz -9 ${from} failed (exit ${code}): ${err.trim()}`))));
    });
    // both: the file written to its end, and xz's exit (which alone says whether what it wrote is whole)
    await Promise.all([pipeline(xz.stdout, createWriteStream(to)), exited]);
  }
  return statSync(to).size;
}

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

/** Refuses an --out that is a file, or a folder holding anything but an earlier kit (which is replaced). */
function checkOut(out: string): void {
  if (!existsSync(out)) return;
  if (!statSync(out).isDirectory()) throw new DeviceKitError('not-a-kit', `--out ${out} is a file: name a folder for the kit`);
  const entries = readdirSync(out);
  if (entries.length && !entries.includes('kit.json')) throw new DeviceKitError('not-a-kit', `--out ${out} holds files and no earlier kit (kit.json): name an empty or new folder`);
}

/** The folder to write, empty (an earlier kit there removed, its results with it). */
function prepareOut(out: string): void {
  if (existsSync(out)) for (const e of readdirSync(out)) rmSync(join(out, e), { recursive: true, force: true });
  mkdirSync(join(out, 'lib'), { recursive: true });
}

/** `node --version` of the Node to carry, which must run here (the kit's target is this kind of machine). */
function nodeVersion(node: string): string {
  if (node === process.execPath) return process.version;
  try {
    const v = execFileSync(node, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 }).trim();
    if (/^v\d+\./.test(v)) return v;
    throw new Error(`it printed '${v.slice(0, 80)}'`);
  } catch (cause) {
    throw new DeviceKitError('not-linux-x64', `--node ${node} does not run as Node here (${String((cause as Error).message).split('\n')[0]}): pass a linux-x64 Node 20 or later`);
  }
}

/** `intab device-kit --out DIR [--node FILE] [--compress gzip|xz] [--vulkan-loader FILE|none]`. */
export async function deviceKit(flags: Flags): Promise<number> {
  if (typeof flags.out !== 'string') throw new DeviceKitError('bad-flag', '--out DIR is required: the folder to write the kit into, e.g. --out /tmp/kit');
  const how = String(flags.compress ?? 'gzip') as Compression;
  if (!KIT_COMPRESSIONS.includes(how)) throw new DeviceKitError('bad-flag', `--compress takes ${KIT_COMPRESSIONS.join(' or ')} (gzip unpacks on any Linux; xz is smaller), e.g. --compress xz`);
  if (flags.node !== undefined && typeof flags.node !== 'string') throw new DeviceKitError('bad-flag', '--node needs a file: a linux-x64 node binary, e.g. --node /usr/bin/node');
  const node = resolve(typeof flags.node === 'string' ? flags.node : process.execPath);
  if (!existsSync(node) || !isElfX64(realpathSync(node))) throw new DeviceKitError('not-linux-x64', `${node} is not an x86-64 Linux binary: the kit runs on x86-64 Linux; pass --node with a linux-x64 Node (20 or later)`);
  const dawn = dawnNodePath();
  if (!existsSync(dawn) || !isElfX64(dawn)) throw new DeviceKitError('not-linux-x64', `${dawn} is not Dawn's linux-x64 dawn.node: build the kit on x86-64 Linux after pnpm install`);
  const loaderFlag = flags['vulkan-loader'];
  if (loaderFlag !== undefined && typeof loaderFlag !== 'string') throw new DeviceKitError('bad-flag', '--vulkan-loader takes a libvulkan.so.1 file, or none');
  const loader = loaderFlag === 'none' ? undefined : typeof loaderFlag === 'string' ? resolve(loaderFlag) : findVulkanLoader();
  if (loader && (!existsSync(loader) || !isElfX64(realpathSync(loader)))) throw new DeviceKitError('bad-flag', `--vulkan-loader ${loader} is not an x86-64 libvulkan.so.1`);

  const version = nodeVersion(node);
  const out = resolve(flags.out);
  checkOut(out);
  const bundle = builtNodeRuntime();
  prepareOut(out);
  const ext = how === 'gzip' ? 'gz' : 'xz';
  copyFileSync(bundle, join(out, BUNDLE_NAME));
  // node and dawn.node at once: zlib's work runs on libuv's threads.
  await Promise.all([
    compress(node, join(out, `node.${ext}`), how),
    compress(dawn, join(out, `dawn.node.${ext}`), how),
    loader ? compress(realpathSync(loader), join(out, 'lib', `libvulkan.so.1.${ext}`), how) : undefined,
  ]);
  const kitDir = join(ROOT, 'packages', 'cli', 'kit');
  copyFileSync(join(kitDir, 'run.sh'), join(out, 'run.sh'));
  chmodSync(join(out, 'run.sh'), 0o755);
  copyFileSync(join(kitDir, 'README.md'), join(out, 'README.md'));
  const webgpu = dirname(createRequire(join(ROOT, 'packages/cli/package.json')).resolve('webgpu/package.json'));
  copyFileSync(join(webgpu, 'LICENSE.md'), join(out, 'LICENSE-dawn.md'));

  const files = Object.fromEntries(filesUnder(out).map((f) => [f, { bytes: statSync(join(out, f)).size, sha256: sha256(join(out, f)) }]));
  const id = createHash('sha256').update(JSON.stringify(files)).digest('hex').slice(0, 16);
  const webgpuVersion = (JSON.parse(readFileSync(join(webgpu, 'package.json'), 'utf8')) as { version: string }).version;
  const manifest = {
    kit: 'intab device kit',
    id,
    created: new Date().toISOString(),
    compress: how,
    node: { version, from: node },
    dawn: { webgpu: webgpuVersion, from: dawn },
    vulkan_loader: loader ? realpathSync(loader) : null,
    run: './run.sh [--quick] (README.md)',
    files,
  };
  writeFileSync(join(out, 'kit.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  writeFileSync(join(out, 'kit-id'), `${id}\n`);

  const bytes = filesUnder(out).reduce((sum, f) => sum + statSync(join(out, f)).size, 0);
  const mib = Math.round((bytes / 2 ** 20) * 10) / 10;
  console.log(JSON.stringify({ device_kit: out, id, bytes, mib, compress: how, node: version, webgpu: webgpuVersion, vulkan_loader: manifest.vulkan_loader, run: `${join(out, 'run.sh')} --quick` }));
  if (!loader) console.error(`intab: no Vulkan loader (libvulkan.so.1) found to carry: the GPU machine needs its own (README.md says how); --vulkan-loader FILE names one`);
  if (bytes > KIT_MAX_BYTES) {
    throw new DeviceKitError('too-large', `the kit in ${out} is ${mib} MiB, over ${KIT_MAX_BYTES / 2 ** 20} MiB: --compress xz makes it about a third smaller (the GPU machine then needs xz or python3), or pass --node a smaller Node binary`);
  }
  return 0;
}
