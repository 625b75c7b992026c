#!/usr/bin/env node
// Writes seeded random-weight Llama-family models, one Hugging Face folder (config.json +
// model.safetensors in F32) per variant, for loaders, tools and benchmarks outside the test runner. The
// generator itself lives in packages/model/src/reference/fixture-generator.mjs (shared with fixtures.ts,
// which builds the same bytes in memory for the Node and browser tests); this file is only the CLI.
// Usage: node scripts/make-fixtures.mjs <out-dir> [--seed N] [--only name,name]   (same seed, same bytes)

import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { VARIANTS, encodeSafetensors, fixtureConfig, makeTensors, variantSeed } from '../packages/model/src/reference/fixture-generator.mjs';

export { VARIANTS, makeTensors, encodeSafetensors };

function main(argv) {
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

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main(process.argv);
