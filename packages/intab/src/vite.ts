// intab/vite: a Vite plugin that builds your TypeScript Service Worker (the script that calls relayOpenAI) as one
// classic script at a fixed URL, the same in `vite` dev and in `vite build`, so that the page registers it with one
// line: navigator.serviceWorker.register('/sw.js'). In dev, /sw.js is bundled on request (in memory, cached until a
// file it bundles changes) and served with `Cache-Control: no-cache`, so the browser's update check sees edits; the
// build emits it as sw.js at the output's root, not hashed. A classic script, not a module: module Service Workers
// are not in every browser an app targets, and one file needs no imports at run time. Its imports resolve
// as the app's do (resolve.alias, resolve.conditions, define, mode); the app's plugins are not applied (pass
// `plugins` for the Service Worker's own). This module runs in Node, in the app's vite.config: it imports Vite, Node
// and intab's dependency-free error base class only, nothing that runs in a browser.

import { build, type Plugin, type PluginOption, type ResolvedConfig, type ViteDevServer } from 'vite';
import { existsSync, statSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { IntabError, errorClass } from '@intab/errors';

/** serviceWorker() was given an option it cannot take (in the app's vite.config): the message says what to write. */
export class InvalidPluginOptionError extends errorClass(IntabError, 'InvalidPluginOptionError', 'invalid_plugin_option')<{
  /** The plugin that refused it: 'serviceWorker'. */
  readonly caller: string;
  /** The option: 'entry', 'fileName' or 'plugins'. */
  readonly option: string;
}> {
  constructor(caller: string, option: string, message: string) {
    super({ caller, option }, message);
  }
}

export interface ServiceWorkerPluginOptions {
  /** The Service Worker's source, relative to the Vite root (or absolute), e.g. 'src/sw.ts'. */
  entry: string;
  /**
   * Where it is served and emitted, relative to `base`: the URL the page registers ['sw.js']. Never hashed: a Service
   * Worker's URL must stay the same across deployments. A Service Worker's scope is at most its own folder, so keep it
   * at the root (the dev and preview servers also send `Service-Worker-Allowed: <base>`, which a production host
   * would have to send too for a file in a subfolder to control the whole site).
   */
  fileName?: string;
  /** Vite plugins for the Service Worker's own bundle: the app's plugins are not applied to it [none]. */
  plugins?: PluginOption[];
}

/** One bundled Service Worker: its files (the script first, then a source map or assets it imports) and what it bundled. */
interface Bundle {
  files: { fileName: string; source: string | Uint8Array }[];
  /** Absolute paths of the modules in it: an edit to one of them makes the dev server bundle it again. */
  modules: Set<string>;
}

/**
 * A Vite plugin that serves and builds your Service Worker from TypeScript, as one classic script at `/sw.js` (the
 * same URL in `vite` dev, `vite build` and `vite preview`), its imports (`intab/service-worker`) bundled in.
 * @example
 * // vite.config.ts
 * import { defineConfig } from 'vite';
 * import { serviceWorker } from 'intab/vite';
 * export default defineConfig({ plugins: [serviceWorker({ entry: 'src/sw.ts' })] });
 *
 * // src/sw.ts
 * import { relayOpenAI } from 'intab/service-worker';
 * relayOpenAI(self);
 *
 * // src/main.ts (the page)
 * await navigator.serviceWorker.register('/sw.js');
 */
export function serviceWorker(options: ServiceWorkerPluginOptions): Plugin {
  const { entry, fileName } = checkOptions(options);
  let config: ResolvedConfig;
  let entryPath: string;
  return {
    name: 'intab:service-worker',
    configResolved(resolved) {
      config = resolved;
      entryPath = resolve(config.root, entry);
      if (!existsSync(entryPath) || !statSync(entryPath).isFile()) {
        throw new InvalidPluginOptionError('serviceWorker', 'entry', `serviceWorker({ entry: ${JSON.stringify(entry)} }): there is no file ${entryPath}: give the path of your Service Worker's source, relative to the Vite root (${config.root}).`);
      }
      if (config.publicDir && existsSync(join(config.publicDir, fileName))) {
        config.logger.warn(`[intab:service-worker] ${relative(config.root, join(config.publicDir, fileName))} is also there, and is served instead of the bundle of ${entry} in dev: delete it.`);
      }
    },

    configureServer(server: ViteDevServer) {
      // Before Vite's own middlewares, so that neither the public folder nor the SPA fallback answers first.
      const url = `${server.config.base}${fileName}`;
      let pending: Promise<Bundle> | undefined;
      let modules = new Set<string>();
      server.watcher.on('all', (event: string, file: string) => {
        // An edit to what it bundles; a file added or removed may change what an import resolves to.
        if (event !== 'change' || modules.size === 0 || modules.has(resolve(file))) pending = undefined;
      });
      server.middlewares.use((req, res, next) => {
        if (req.url?.split('?')[0] !== url) return next();
        const bundled = (pending ??= bundle(config, entryPath, fileName, options.plugins, 'dev'));
        bundled.then(
          (b) => {
            modules = b.modules;
            res.setHeader('content-type', 'text/javascript; charset=utf-8');
            res.setHeader('cache-control', 'no-cache');
            res.setHeader('service-worker-allowed', server.config.base);
            res.end(b.files[0].source);
          },
          (err: Error) => {
            if (pending === bundled) pending = undefined; // the next request tries again
            config.logger.error(`[intab:service-worker] ${entry} could not be bundled for ${url}: ${err.message}`, { error: err, timestamp: true });
            res.statusCode = 500;
            res.setHeader('content-type', 'text/plain; charset=utf-8');
            res.setHeader('cache-control', 'no-cache');
            res.end(`${entry} could not be bundled: ${err.message}`);
          },
        );
      });
    },

    configurePreviewServer(server) {
      const url = `${server.config.base}${fileName}`;
      server.middlewares.use((req, res, next) => {
        if (req.url?.split('?')[0] === url) {
          res.setHeader('cache-control', 'no-cache');
          res.setHeader('service-worker-allowed', server.config.base);
        }
        next();
      });
    },

    async generateBundle() {
      // The browser's bundle only: not an SSR build, nor another environment of the app's.
      if (this.environment && this.environment.config.consumer !== 'client') return;
      const b = await bundle(config, entryPath, fileName, options.plugins, 'build');
      for (const f of b.files) this.emitFile({ type: 'asset', fileName: f.fileName, source: f.source });
    },
  };
}

/** The options, checked: a mistake in the app's vite.config is named there, with what to write instead. */
function checkOptions(options: ServiceWorkerPluginOptions): { entry: string; fileName: string } {
  const o = options as Partial<ServiceWorkerPluginOptions> | undefined;
  if (typeof o?.entry !== 'string' || o.entry === '') {
    throw new InvalidPluginOptionError('serviceWorker', 'entry', `serviceWorker() needs the path of your Service Worker's source: serviceWorker({ entry: 'src/sw.ts' }), not ${JSON.stringify(o?.entry)}.`);
  }
  const fileName = o.fileName ?? 'sw.js';
  if (typeof fileName !== 'string' || !/^[\w.-]+(\/[\w.-]+)*\.js$/.test(fileName) || fileName.split('/').some((part) => part === '.' || part === '..')) {
    throw new InvalidPluginOptionError('serviceWorker', 'fileName', `serviceWorker({ fileName }) is the URL path under base that the page registers, such as 'sw.js' (no leading '/', no '..', ending in .js), not ${JSON.stringify(fileName)}.`);
  }
  if (o.plugins !== undefined && !Array.isArray(o.plugins)) {
    throw new InvalidPluginOptionError('serviceWorker', 'plugins', 'serviceWorker({ plugins }) is an array of Vite plugins for the Service Worker\'s own bundle.');
  }
  return { entry: o.entry, fileName };
}

/**
 * The Service Worker as one classic script (IIFE, dynamic imports inlined), bundled by Vite in memory with the app's
 * resolution. 'dev': unminified, with an inline source map; 'build': minified and mapped as the app's build is.
 */
async function bundle(config: ResolvedConfig, entryPath: string, fileName: string, plugins: PluginOption[] | undefined, kind: 'dev' | 'build'): Promise<Bundle> {
  const client = config.environments?.client?.resolve ?? config.resolve;
  const result = await build({
    configFile: false,
    root: config.root,
    base: config.base,
    mode: config.mode,
    envDir: config.envDir,
    envPrefix: config.envPrefix,
    define: config.define,
    publicDir: false,
    // Its warnings and errors, not its progress lines (quieter still when the app's config asks).
    logLevel: config.logLevel === 'silent' || config.logLevel === 'error' ? config.logLevel : 'warn',
    clearScreen: false,
    resolve: {
      alias: config.resolve.alias,
      conditions: client.conditions,
      mainFields: client.mainFields,
      extensions: client.extensions,
      dedupe: client.dedupe,
      preserveSymlinks: config.resolve.preserveSymlinks,
      tsconfigPaths: config.resolve.tsconfigPaths,
    },
    plugins,
    build: {
      write: false,
      emptyOutDir: false,
      copyPublicDir: false,
      reportCompressedSize: false,
      modulePreload: false,
      // A Service Worker's script runs where the page does: as new as the app's target.
      target: kind === 'dev' ? 'esnext' : config.build.target,
      minify: kind === 'dev' ? false : config.build.minify,
      sourcemap: kind === 'dev' ? 'inline' : config.build.sourcemap,
      assetsDir: config.build.assetsDir,
      rolldownOptions: {
        input: entryPath,
        output: { format: 'iife', entryFileNames: fileName, codeSplitting: false },
      },
    },
  });
  const outputs = (Array.isArray(result) ? result : [result]) as { output?: readonly BundleItem[] }[];
  const items = outputs.flatMap((o) => o.output ?? []);
  const script = items.find((i): i is ChunkItem => i.type === 'chunk' && i.fileName === fileName);
  if (!script) throw new Error(`Vite's build of ${entryPath} gave no ${fileName} (it gave ${items.map((i) => i.fileName).join(', ') || 'nothing'}).`);
  const rest = items.filter((i) => i !== script);
  return {
    files: [{ fileName, source: script.code }, ...rest.map((i) => ({ fileName: i.fileName, source: i.type === 'chunk' ? i.code : i.source }))],
    modules: new Set(script.moduleIds.filter((id) => isAbsolute(id)).map((id) => resolve(id))),
  };
}

type ChunkItem = { type: 'chunk'; fileName: string; code: string; moduleIds: readonly string[] };
type BundleItem = ChunkItem | { type: 'asset'; fileName: string; source: string | Uint8Array };
