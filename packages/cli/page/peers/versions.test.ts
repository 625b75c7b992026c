// The peers load wasm binaries by path from node_modules, so the CLI's devDependencies must stay in step with what
// the peers' JavaScript expects: transformers.ts serves the asyncify wasm of the CLI's own onnxruntime-web, which
// must be the very version transformers.js imports (a different build's glue fails at instantiation, cryptically).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const json = (rel: string): { version?: string; dependencies?: Record<string, string>; devDependencies?: Record<string, string> } =>
  JSON.parse(readFileSync(fileURLToPath(new URL(rel, import.meta.url)), 'utf8'));

test("the CLI's onnxruntime-web is the version transformers.js depends on", () => {
  const cli = json('../../package.json');
  const transformers = json('../../node_modules/@huggingface/transformers/package.json');
  const ours = cli.devDependencies?.['onnxruntime-web'];
  const theirs = transformers.dependencies?.['onnxruntime-web'];
  expect(theirs, 'transformers.js no longer depends on onnxruntime-web: revisit peers/transformers.ts').toBeDefined();
  expect(ours, `packages/cli's devDependency onnxruntime-web must be exactly ${theirs}, the version transformers.js ${transformers.version} imports`).toBe(theirs);
});
