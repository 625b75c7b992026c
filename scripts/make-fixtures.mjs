#!/usr/bin/env node
// Writes seeded random-weight Llama-family models, one Hugging Face folder (config.json +
// model.safetensors in F32) per variant, for loaders, tools and benchmarks outside the test runner. The
// generator itself is @intab/testing's fixture-generator.ts (shared with its fixtures.ts, which builds the same
// bytes in memory for the Node and browser tests), TypeScript that Node 20 cannot import: Vite's module runner
// (the workspace's Vite) loads it. This file is only the CLI.
// Usage: node scripts/make-fixtures.mjs <out-dir> [--seed N] [--only name,name]   (same seed, same bytes)

import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runnerImport } from 'vite';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** @intab/testing's generator, through Vite's module runner (by its package name, as the workspace resolves it). */
async function generator() {
  const { module } = await runnerImport('@intab/testing/fixture-generator', { root: ROOT, configFile: false, logLevel: 'error' });
  return module;
}

async function main(argv) {
  const { VARIANTS, encodeSafetensors, fixtureConfig, makeTensors, variantSeed } = await generator();
  const args = argv.slice(2);
  const outDir = args.find((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--')));
  const opt = (name) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : undefined;
  };
  if (!outDir) {
    console.error('usage: node scripts/make-fixtures.mjs <out-dir> [--seed N] [--only name,name]\nvariants: ' + Object.keys(VARIANTS).join(', '));
    process.exit(2);
  }
  const seed = Number(opt('seed') ?? 1234);
  if (!Number.isInteger(seed)) {
    console.error(`--seed should be an integer, got ${opt('seed')}`);
    process.exit(2);
  }
  const only = opt('only')?.split(',');
  const unknown = only?.filter((n) => !(n in VARIANTS)) ?? [];
  if (unknown.length) {
    console.error(`unknown variant(s) ${unknown.join(', ')}; known: ${Object.keys(VARIANTS).join(', ')}`);
    process.exit(2);
  }
  const names = Object.keys(VARIANTS).filter((n) => !only || only.includes(n));
  names.forEach((name, i) => {
    const config = fixtureConfig(name);
    const dir = join(outDir, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2) + '\n');
    writeFileSync(join(dir, 'model.safetensors'), encodeSafetensors(makeTensors(config, variantSeed(name, seed))));
    console.log(JSON.stringify({ variant: name, dir, seed, index: i }));
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main(process.argv);
