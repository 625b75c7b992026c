// Global setup of the browser test tier: a local hub server (packages/intab/src/store/test-server.mjs) that serves
// ../shared's stories260K as two repositories, for the model store's tests, and as a third in the onnx-community
// layout (config.json, onnx/model.onnx and its external data onnx/model.onnx_data), written here from the GGUF by
// @intab/onnx's own graph builder, for the ONNX backend's tests. Tests read its address with inject('hubUrl').
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openGguf, pathSource } from '../packages/model/src/index.ts';
import { buildLlamaGraph, tensorWeights } from '../packages/onnx/src/llama-graph.ts';
import { startHubServer } from '../packages/intab/src/store/test-server.mjs';

const SHARED = resolve(process.env.INTAB_SHARED ?? fileURLToPath(new URL('../../shared', import.meta.url)));
const STORIES = join(SHARED, 'models', 'stories260K');

/** stories260K as an onnx-community folder in a fresh temporary directory. */
async function onnxFolder() {
  const dir = mkdtempSync(join(tmpdir(), 'intab-onnx-'));
  const model = await openGguf(await pathSource(join(STORIES, 'stories260K.gguf')));
  const graph = await buildLlamaGraph(model.config, tensorWeights(model.tensors), { externalData: 'model.onnx_data' });
  if (!graph.externalData) throw new Error('the graph builder kept the weights inline although externalData was asked for');
  mkdirSync(join(dir, 'onnx'));
  copyFileSync(join(STORIES, 'hf', 'config.json'), join(dir, 'config.json'));
  writeFileSync(join(dir, 'onnx', 'model.onnx'), graph.model);
  writeFileSync(join(dir, 'onnx', graph.externalData.path), graph.externalData.data);
  return dir;
}

/** @param {{ provide(key: string, value: unknown): void }} project */
export default async function setup(project) {
  const onnx = await onnxFolder();
  const hub = await startHubServer(
    { 'test/stories': STORIES, 'test/stories-hf': join(STORIES, 'hf'), 'test/stories-onnx': onnx },
    { 'test/huge': [{ path: 'huge-model.gguf', size: 64 * 2 ** 30 }] },
  );
  project.provide('hubUrl', hub.url);
  return async () => {
    await hub.close();
    rmSync(onnx, { recursive: true, force: true });
  };
}
