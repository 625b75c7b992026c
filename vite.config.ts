// One Vite config for the whole repository: it serves the examples and runs the test tiers.
// Node tier: *.test.ts in Node. GPU tier: *.gpu.test.ts in real headless Chromium with WebGPU
// (SwiftShader when the machine has no GPU), through Vitest's Playwright provider.
import { defineConfig } from 'vitest/config';
import { playwright } from '@vitest/browser-playwright';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromiumArgs, chromiumPath } from './scripts/chromium.mjs';
import { intabSourceAliases } from './scripts/intab-source.ts';

// ../shared (test models, schemas) beside the repository, as on developer machines and in CI.
const SHARED = resolve(process.env.INTAB_SHARED ?? fileURLToPath(new URL('../shared', import.meta.url)));

export default defineConfig({
  // `intab` from its sources: its package.json's exports name dist/, which only the published tarball has.
  resolve: { alias: intabSourceAliases() },
  server: { fs: { allow: ['.', SHARED] } },
  // Browser tests fetch shared files through Vite at `/@fs${import.meta.env.INTAB_SHARED}/...`.
  define: { 'import.meta.env.INTAB_SHARED': JSON.stringify(SHARED) },
  // Pre-bundled up front (root devDependencies so Vite resolves them): discovered late, Vite reloads
  // the page mid-test.
  optimizeDeps: { include: ['comlink', '@huggingface/jinja', '@huggingface/tokenizers'] },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'node',
          environment: 'node',
          include: ['packages/**/*.test.ts', 'scripts/**/*.test.ts', 'examples/**/*.test.ts'],
          exclude: ['**/*.gpu.test.ts', '**/node_modules/**'],
          // CPU reference models and real 151k vocabularies: seconds per test on 2 cores, more under load.
          testTimeout: 30_000,
          // Two files at once even on 2 cores (Vitest's default there is one): many files wait on servers, child
          // processes and browsers they start, and the tier takes ~340 s instead of ~520 s on this 2-core machine.
          maxWorkers: 2,
          // The aliases above, for tests that configure a Vite of their own (packages/intab/src/vite.test.ts): a
          // package's test imports nothing from scripts/, so the repository hands them over (RegExps as their source).
          provide: { intabSourceAliases: intabSourceAliases().map((a) => ({ find: a.find.source, replacement: a.replacement })) },
        },
      },
      {
        extends: true,
        test: {
          name: 'gpu',
          include: ['packages/**/*.gpu.test.ts'],
          // A local model hub (Range, CORS, LFS hashes, misbehaviour on request) for the model store's tests.
          globalSetup: ['./scripts/hub-server-setup.mjs', './scripts/embed-oracle-setup.mjs'],
          // Opt-in benchmarks in the browser (INTAB_CPU_KERNEL_BENCH=1: the wasm matmul kernels' step timings).
          provide: { cpuKernelBench: process.env.INTAB_CPU_KERNEL_BENCH === '1' },
          testTimeout: 120_000,
          hookTimeout: 120_000,
          browser: {
            enabled: true,
            headless: true,
            screenshotFailures: false,
            provider: playwright({
              launchOptions: { executablePath: chromiumPath(), args: chromiumArgs() },
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
});
