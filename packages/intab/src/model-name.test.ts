// The model names createEngine reports for each kind of input, above all Files picked without their folder: never
// 'config.json'.
import { describe, expect, test } from 'vitest';
import { filesName, modelName } from './model-name.ts';

const file = (name: string, body = '', relative = '') => {
  const f = new File([body], name);
  if (relative) Object.defineProperty(f, 'webkitRelativePath', { value: relative });
  return f;
};

describe('modelName', () => {
  test('URLs, hub ids and a given name', async () => {
    expect(await modelName({ model: 'https://host/models/stories260K.gguf?download=1' })).toBe('stories260K.gguf');
    expect(await modelName({ model: 'HuggingFaceTB/SmolLM2-135M-Instruct' })).toBe('HuggingFaceTB/SmolLM2-135M-Instruct');
    expect(await modelName({ model: 'org/repo', file: 'q4.gguf' })).toBe('org/repo/q4.gguf');
    expect(await modelName({ model: 'x.gguf', name: 'mine' })).toBe('mine');
  });

  test("Files: the folder's name, else the GGUF's, else the config's own name, never config.json", async () => {
    expect(await filesName([file('config.json', '{}', 'SmolLM2/config.json'), file('model.safetensors', '', 'SmolLM2/model.safetensors')])).toBe('SmolLM2');
    expect(await filesName([file('config.json', '{}'), file('qwen3-0.6b-q4_0-00001-of-00002.gguf')])).toBe('qwen3-0.6b-q4_0');
    expect(await filesName([file('config.json', JSON.stringify({ _name_or_path: 'HuggingFaceTB/SmolLM2-135M', model_type: 'llama' })), file('model.safetensors')])).toBe('SmolLM2-135M');
    expect(await filesName([file('config.json', JSON.stringify({ model_type: 'llama' })), file('model.safetensors')])).toBe('llama');
    expect(await filesName([file('config.json', 'not json'), file('tokenizer.json'), file('model.safetensors')])).toBe('model');
    expect(await filesName([file('config.json', 'not json')])).toBe('local');
  });
});
