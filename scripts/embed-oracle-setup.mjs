// @ts-check
// Global setup of the browser test tier, for the embedding tests: a seeded all-MiniLM-L6-shaped GGUF (2 layers, f32,
// its WordPiece vocabulary inside) written by `intab make-model`, served by a local hub at `test/minilm`, and what
// llama.cpp (node-llama-cpp, native, in this Node process) makes of it: the ids and pooled vectors of the shared
// embedding inputs. Tests read inject('embedHubUrl') and inject('embedOracle') and compare the engine's vectors in
// Chromium with llama.cpp's directly.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHubServer } from '@intab/testing/hub-server';
import { EMBED_INPUTS } from '@intab/testing/embed-inputs';
import { writeSyntheticModel } from '../packages/cli/src/make-model.ts';
import { llamaCppEmbeddings } from '../packages/cli/src/test-llamacpp.ts';

/** @param {{ provide(key: string, value: unknown): void }} project */
export default async function setup(project) {
  const dir = mkdtempSync(join(tmpdir(), 'intab-embed-hub-'));
  const out = join(dir, 'all-minilm-l6.gguf');
  writeSyntheticModel({ like: 'all-minilm-l6', dtype: 'f32', layers: 2, seed: 27, out });
  const oracle = await llamaCppEmbeddings(out, EMBED_INPUTS);
  const hub = await startHubServer({ 'test/minilm': dir });
  project.provide('embedHubUrl', hub.url);
  project.provide('embedOracle', oracle);
  return async () => {
    await hub.close();
    rmSync(dir, { recursive: true, force: true });
  };
}
