// A module Worker for streaming.gpu.test.ts: the Engine exposed through Comlink exactly as worker.ts does, over the CPU
// reference runner made to behave as onnxruntime's wasm does: each step computes inside the call and holds the thread
// (STEP_MS here) without ever leaving the event loop, so a message from the page (the next pull, an abort) can only be
// read between two steps. The runner's step log is exposed beside the EngineApi.

import * as Comlink from 'comlink';
import { Engine, type ModelInfo } from '@intab/engine';
import { ReferenceRunner, type StepLogEntry } from '@intab/engine/reference';
import { registerTransferHandlers } from '@intab/engine/transfer';
import type { StepEntry, StepOptions, StepResult } from '@intab/model';
import { fixtureWeights } from '@intab/testing/fixtures';

/** How long a step holds the thread: far longer than a message's trip between the page and a worker. */
const STEP_MS = 100;

class BlockingRunner extends ReferenceRunner {
  override step(entries: readonly StepEntry[], options?: StepOptions): Promise<StepResult[]> {
    const results = super.step(entries, options); // computed before it returns: yieldEachStep is off
    const until = performance.now() + STEP_MS;
    while (performance.now() < until); // the thread is busy, as in a wasm kernel
    return results;
  }
}

const { config, tensors } = fixtureWeights('llama');
const runner = new BlockingRunner(config, (n) => tensors.get(n), { pages: 64, pageSize: 16, yieldEachStep: false });
const info: ModelInfo = {
  backend: { name: 'onnx-wasm', reason: 'a test worker: the CPU reference runner, blocking as onnxruntime-web wasm does' },
  arch: config.arch,
  layers: config.layers,
  hidden: config.hidden,
  vocab: config.vocab,
  contextLength: config.maxContext,
  hasTokenizer: false,
  hasChatTemplate: false,
  toolFormat: null,
  weightBytes: 0,
  kvPages: runner.kv.pages,
  adapter: 'cpu reference (blocking)',
};
const engine = new Engine({ runner, info, options: { seed: 1 } });

export interface StreamingCheckApi {
  workerInfo(): ModelInfo;
  stepLog(): StepLogEntry[];
}

registerTransferHandlers();
Comlink.expose(Object.assign(engine, { workerInfo: () => info, stepLog: () => runner.log } satisfies StreamingCheckApi));
