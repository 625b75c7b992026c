// `intab bench tools`'s flags, checked before a model loads, and the tool list its ttft figure preloads: tools an
// OpenAI request accepts (the mapping's own checks), each name once. The figures themselves are the bench's to print.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { toGenerateRequest } from 'intab';
import { benchToolsOptions, median, sampleTools } from './bench-tools.ts';
import { parseArgs } from './args.ts';
import { main } from './main.ts';

const flags = (argv: string[]) => parseArgs(argv).flags;
/** A file for --model to name (the flags are checked before anything reads it). */
const model = join(mkdtempSync(join(tmpdir(), 'intab-bench-tools-')), 'q.gguf');
writeFileSync(model, '');

describe('intab bench tools', () => {
  test('flags: defaults, bounds, and what each refusal says', () => {
    expect(benchToolsOptions(flags(['--model', model, '--json']))).toMatchObject({ json: true, maxTokens: 64, repeats: 3, tools: 10, seed: 1, backend: 'auto', model: { kind: 'gguf', dir: join(model, '..'), files: ['q.gguf'] } });
    expect(benchToolsOptions(flags(['--model', model, '--tools', '20', '--repeats', '5', '--backend', 'webgpu', '--threads', '2']))).toMatchObject({ tools: 20, repeats: 5, backend: 'webgpu', threads: 2 });
    expect(() => benchToolsOptions(flags([]))).toThrow(/--model <gguf file \| HF folder \| URL> is required: a model with a chat template/);
    expect(() => benchToolsOptions(flags(['--model', model, '--backend', 'onnx-webgpu']))).toThrow(/--backend takes auto, webgpu, onnx-wasm/);
    expect(() => benchToolsOptions(flags(['--model', model, '--tools', '129']))).toThrow(/--tools/);
  });

  test('the command takes only its flags, and runs in this process', async () => {
    await expect(main(['bench', 'tools', '--model', 'q.gguf', '--temprature', '0'])).rejects.toThrow(/intab bench tools does not take --temprature/);
    await expect(main(['bench', 'tools', '--model', 'q.gguf', '--runtime', 'chromium'])).rejects.toThrow(/runs the engine in this process/);
  });

  test('the preloaded tools: distinct names, every one a tool the OpenAI mapping accepts', () => {
    for (const n of [1, 10, 128]) {
      const tools = sampleTools(n);
      expect(new Set(tools.map((t) => t.function.name)).size).toBe(n);
      expect(toGenerateRequest({ messages: [{ role: 'user', content: 'hi' }], tools } as never).tools).toEqual(tools);
    }
  });

  test('the figures are medians', () => {
    expect([median([2.02, 2.66, 2.15]), median([4, 1, 3, 2]), median([7])]).toEqual([2.15, 2.5, 7]);
  });
});
