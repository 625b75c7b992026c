// The repositories the test tiers' local hub serves: ../shared's stories260K as a GGUF repository and as its Hugging
// Face folder, and as three more written here: an onnx-community folder (config.json, onnx/model.onnx and its external
// data onnx/model.onnx_data, written from the GGUF by @intab/onnx's own graph builder), a folder with every file a
// folder load reads (a tokenizer, generation_config.json), and the same checkpoint as two safetensors shards with their
// index; and a virtual repository too large for any quota. The browser tier's global setup (scripts/hub-server-setup.mjs)
// and the Node tests that need the same hub start it here.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openGguf, pathSource } from '@intab/model';
import { buildLlamaGraph, tensorWeights } from '@intab/onnx';
import { startHubServer } from './hub-server.ts';
import { tinyChatTokenizerFiles } from './tiny-tokenizer.ts';

const SHARED = resolve(process.env.INTAB_SHARED ?? fileURLToPath(new URL('../../../../shared', import.meta.url)));
const STORIES = join(SHARED, 'models', 'stories260K');

/** stories260K as an onnx-community folder in a fresh temporary directory. */
async function onnxFolder(): Promise<string> {
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

/**
 * stories260K's Hugging Face folder with every file a folder load reads: config.json, tokenizer.json,
 * tokenizer_config.json, generation_config.json, and the weights as `model.safetensors` or, with `shards`, as that
 * many shards named by model.safetensors.index.json.
 */
function fullFolder(shards = 0): string {
  const dir = mkdtempSync(join(tmpdir(), 'intab-hf-'));
  const { tokenizerJson, tokenizerConfig } = tinyChatTokenizerFiles();
  copyFileSync(join(STORIES, 'hf', 'config.json'), join(dir, 'config.json'));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig));
  writeFileSync(join(dir, 'generation_config.json'), JSON.stringify({ eos_token_id: 97 }));
  const weights = readFileSync(join(STORIES, 'hf', 'model.safetensors'));
  if (shards === 0) copyFileSync(join(STORIES, 'hf', 'model.safetensors'), join(dir, 'model.safetensors'));
  else writeShards(weights, shards, dir);
  return dir;
}

/** Cuts a safetensors file into `n` shards (tensors in header order) and writes them with their index. */
function writeShards(file: Buffer, n: number, dir: string): void {
  const headerLength = Number(file.readBigUInt64LE(0));
  const header = JSON.parse(file.subarray(8, 8 + headerLength).toString('utf8'));
  const data = file.subarray(8 + headerLength);
  const names = Object.keys(header).filter((k) => k !== '__metadata__');
  const weightMap: Record<string, string> = {};
  for (let s = 0; s < n; s++) {
    const shard = `model-${String(s + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.safetensors`;
    const mine = names.slice(Math.floor((s * names.length) / n), Math.floor(((s + 1) * names.length) / n));
    const head: Record<string, unknown> = header.__metadata__ ? { __metadata__: header.__metadata__ } : {};
    const parts: Buffer[] = [];
    let at = 0;
    for (const name of mine) {
      const [begin, end] = header[name].data_offsets;
      head[name] = { ...header[name], data_offsets: [at, at + end - begin] };
      parts.push(data.subarray(begin, end));
      at += end - begin;
      weightMap[name] = shard;
    }
    let json = JSON.stringify(head);
    json += ' '.repeat((8 - (json.length % 8)) % 8);
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
    writeFileSync(join(dir, shard), Buffer.concat([length, Buffer.from(json), ...parts]));
  }
  writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: { total_size: data.length }, weight_map: weightMap }));
}

/** A loopback URL nothing listens at any more: a server is started and closed, so connections to it are refused. */
async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', () => r(undefined)));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

/** The test hub, started: its origin, a loopback URL nothing listens at (connections are refused), and its end. */
export interface TestHub {
  url: string;
  unreachableUrl: string;
  close(): Promise<void>;
}

/**
 * Writes the generated repositories and starts the hub that serves them all (`test/stories`, `test/stories-hf`,
 * `test/stories-onnx`, `test/stories-full`, `test/stories-sharded`, and the virtual `test/huge`).
 * @example
 * const hub = await startTestHub();
 * await fetch(`${hub.url}/test/stories-hf/resolve/main/config.json`);
 * await hub.close();
 */
export async function startTestHub(): Promise<TestHub> {
  const onnx = await onnxFolder();
  const full = fullFolder();
  const sharded = fullFolder(2);
  const hub = await startHubServer(
    { 'test/stories': STORIES, 'test/stories-hf': join(STORIES, 'hf'), 'test/stories-onnx': onnx, 'test/stories-full': full, 'test/stories-sharded': sharded },
    { 'test/huge': [{ path: 'huge-model.gguf', size: 64 * 2 ** 30 }] },
  );
  return {
    url: hub.url,
    unreachableUrl: await closedPortUrl(),
    close: async () => {
      await hub.close();
      for (const dir of [onnx, full, sharded]) rmSync(dir, { recursive: true, force: true });
    },
  };
}
