// Tool calls on intab's WebGPU kernels (headless Chromium): a random-weight one-layer model whose vocabulary and chat
// template are Qwen3's (written as GGUF with the tokenizer in its metadata, as convert_hf_to_gguf.py does), so the
// masks of the call grammar go to the GPU sampler. Seeded 'required' samples make calls that parse, name an allowed
// function and validate under its schema; n-gram speculation under the same masks gives the same ids; 'auto' leaves a
// call out when the model writes text.
import { afterAll, describe, expect, test } from 'vitest';
import { requestGpu, type Gpu } from '@intab/gpu';
import { Runner, bytesSource, loadTokenizer, openGguf, openTokenizer } from '@intab/model';
import { fetchRealTokenizerFiles } from '@intab/testing/browser-tokenizers';
import { schemaValidator } from '@intab/testing/schema-validator';
import { syntheticGguf } from '@intab/testing/synthetic';
import { SHORT_TOOLS } from '@intab/testing/tools-corpus';
import type { ChatMessage, ToolCall, ToolDefinition } from '../contract.ts';
import { Engine } from '../engine.ts';
import { collect } from '../test-streams.ts';

const TOOLS = SHORT_TOOLS as ToolDefinition[];
const MESSAGES: ChatMessage[] = [{ role: 'user', content: 'What time is it in Paris?' }];

let gpu: Gpu | undefined;
afterAll(() => gpu?.destroy());

async function engine(): Promise<Engine> {
  gpu ??= await requestGpu();
  const tokenizer = loadTokenizer(await fetchRealTokenizerFiles('qwen3'));
  const shape = { hidden: 64, ffn: 128, layers: 1, heads: 4, kvHeads: 2, headDim: 16, vocab: 0, ropeTheta: 10000, context: 2048 };
  const model = await openGguf(bytesSource('qwen3-vocab.gguf', syntheticGguf(shape, 'f32', 3, { tokenizer })));
  const runner = await Runner.load(gpu, model.config, model.tensors, { kvBudgetBytes: 8 << 20, maxBatch: 4 });
  return new Engine({ runner, tokenizer: openTokenizer(model), options: { seed: 1 } });
}

function calls(chunks: { toolCalls?: { index: number; id?: string; function: { name?: string; arguments: string } }[] }[]): ToolCall[] {
  const out: ToolCall[] = [];
  for (const d of chunks.flatMap((c) => c.toolCalls ?? [])) {
    if (d.id !== undefined) out.push({ id: d.id, type: 'function', function: { name: d.function.name!, arguments: d.function.arguments } });
    else out[d.index].function.arguments += d.function.arguments;
  }
  return out;
}

describe('tool calls on the WebGPU kernels (Qwen3 vocabulary and template)', () => {
  test("'required': calls valid under their schemas; ngram speculation gives the same ids", async () => {
    const e = await engine();
    expect(e.modelInfo).toBeUndefined(); // in-thread over a runner: the format comes from the tokenizer's template
    for (let seed = 0; seed < 4; seed++) {
      const request = { messages: MESSAGES, tools: TOOLS, toolChoice: 'required' as const, maxTokens: 80, temperature: 1, seed };
      const plain = await collect(e, await e.start(request));
      expect(plain.last.finishReason).toBe('tool_calls');
      expect(plain.text).toBe('');
      const made = calls(plain.chunks);
      expect(made.length).toBeGreaterThan(0);
      for (const c of made) {
        const tool = TOOLS.find((t) => t.function.name === c.function.name);
        expect(tool, c.function.name).toBeDefined();
        const v = schemaValidator(tool!.function.parameters)!(JSON.parse(c.function.arguments));
        expect(v.valid, `${c.function.name}(${c.function.arguments})`).toBe(true);
      }
      const spec = await collect(e, await e.start({ ...request, speculative: { method: 'ngram', k: 4, adaptive: false } }));
      expect(spec.ids).toEqual(plain.ids);
    }
    // 'auto' without a push toward the trigger: the random model writes text, all of it content.
    const auto = await collect(e, await e.start({ messages: MESSAGES, tools: TOOLS, maxTokens: 8, seed: 2 }));
    expect(auto.chunks.some((c) => c.toolCalls)).toBe(false);
    expect(auto.last.finishReason).toBe('length');
    await e.destroy();
  });
});
