// Hugging Face folder reader: stories260K's real folder from disk, a sharded folder with every optional JSON
// file, and typed errors naming the file for corrupt or missing pieces.

import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { IntabModelError, ModelFormatError, ModelMismatchError, UnsupportedModelError } from '../errors.ts';
import { bytesSource, pathSource } from '../source.ts';
import type { ByteSource } from '../types.ts';
import { folderLookup, readHfFolder } from './hf-folder.ts';
import { writeSafetensors } from './safetensors.ts';

const SHARED = process.env.INTAB_SHARED ? `${process.env.INTAB_SHARED.replace(/\/$/, '')}/` : fileURLToPath(new URL('../../../../../shared/', import.meta.url));
const HF = `${SHARED}models/stories260K/hf/`;

const json = (name: string, v: unknown) => [name, bytesSource(name, new TextEncoder().encode(JSON.stringify(v)))] as const;
const f32 = (v: number[]) => new Uint8Array(new Float32Array(v).buffer);

async function rejection(p: Promise<unknown>): Promise<IntabModelError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(IntabModelError);
    return e as IntabModelError;
  }
  throw new Error('expected the read to fail');
}

describe('readHfFolder', () => {
  it('reads stories260K from disk (keys with a folder prefix)', async () => {
    const files = new Map<string, ByteSource>([
      ['stories/hf/config.json', await pathSource(`${HF}config.json`)],
      ['stories/hf/model.safetensors', await pathSource(`${HF}model.safetensors`)],
    ]);
    const f = await readHfFolder(files);
    expect(f.config).toMatchObject({ model_type: 'llama', hidden_size: 64, num_hidden_layers: 5, num_key_value_heads: 4, vocab_size: 512 });
    expect(f.generationConfig).toBeUndefined();
    expect(f.tokenizerJson).toBeUndefined();
    expect(f.tokenizerConfig).toBeUndefined();
    expect(f.safetensorsMetadata).toEqual({ format: 'pt' });
    expect(f.tensors.find((t) => t.name === 'model.embed_tokens.weight')!.shape).toEqual([512, 64]);
    expect(f.tensors.length).toBe(47);
  });

  const shard = (names: string[], base: number) =>
    writeSafetensors(names.map((n, i) => ({ name: n, dtype: 'F32', shape: [2], data: f32([base + i, -(base + i)]) })), { format: 'pt' });
  const sharded = () => new Map<string, ByteSource>([
    json('config.json', { model_type: 'qwen2', hidden_size: 8 }),
    json('generation_config.json', { eos_token_id: [1, 2], temperature: 0.7 }),
    json('tokenizer.json', { version: '1.0', model: { type: 'BPE', vocab: { a: 0 } } }),
    json('tokenizer_config.json', { chat_template: '{{ messages }}', add_bos_token: false }),
    json('model.safetensors.index.json', {
      metadata: { total_size: 24 },
      weight_map: { 'a.weight': 'model-00001-of-00002.safetensors', 'b.weight': 'model-00001-of-00002.safetensors', 'c.weight': 'model-00002-of-00002.safetensors' },
    }),
    ['model-00001-of-00002.safetensors', bytesSource('model-00001-of-00002.safetensors', shard(['a.weight', 'b.weight'], 1))],
    ['model-00002-of-00002.safetensors', bytesSource('model-00002-of-00002.safetensors', shard(['c.weight'], 3))],
  ]);

  it('reads a sharded folder with every optional file', async () => {
    const files = sharded();
    const f = await readHfFolder((name) => files.get(name));
    expect(f.config).toEqual({ model_type: 'qwen2', hidden_size: 8 });
    expect(f.generationConfig).toEqual({ eos_token_id: [1, 2], temperature: 0.7 });
    expect(f.tokenizerJson).toMatchObject({ model: { type: 'BPE' } });
    expect(f.tokenizerConfig).toEqual({ chat_template: '{{ messages }}', add_bos_token: false });
    expect(f.tensors.map((t) => [t.name, t.source.name])).toEqual([
      ['a.weight', 'model-00001-of-00002.safetensors'],
      ['b.weight', 'model-00001-of-00002.safetensors'],
      ['c.weight', 'model-00002-of-00002.safetensors'],
    ]);
    const c = f.tensors[2];
    expect([...new Float32Array((await c.source.read(c.offset, c.byteLength)).slice().buffer)]).toEqual([3, -3]);
  });

  it.each(['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors.index.json'])(
    'corrupt %s is a ModelFormatError naming it',
    async (name) => {
      const files = sharded();
      files.set(name, bytesSource(name, new TextEncoder().encode('{"model": {"type": "BPE", "vocab": {"a": 0,}')));
      const e = await rejection(readHfFolder(files));
      expect(e).toBeInstanceOf(ModelFormatError);
      expect((e as ModelFormatError).file).toBe(name);
      expect(e.message).toContain(name);
    },
  );

  it('JSON that is not an object, missing files, PyTorch-only weights', async () => {
    let files = sharded();
    files.set('tokenizer.json', bytesSource('tokenizer.json', new TextEncoder().encode('[1, 2]')));
    let e = await rejection(readHfFolder(files));
    expect((e as ModelFormatError).file).toBe('tokenizer.json');

    files = sharded();
    files.delete('config.json');
    e = await rejection(readHfFolder(files));
    expect(e).toBeInstanceOf(ModelFormatError);
    expect(e.message).toContain('config.json');

    files = sharded();
    files.delete('model-00002-of-00002.safetensors');
    e = await rejection(readHfFolder(files));
    expect(e).toBeInstanceOf(ModelMismatchError);
    expect(e.message).toContain('model-00002-of-00002.safetensors');

    e = await rejection(readHfFolder(new Map([json('config.json', {})])));
    expect(e).toBeInstanceOf(ModelFormatError);
    expect(e.message).toContain('model.safetensors');

    e = await rejection(readHfFolder(new Map([json('config.json', {}), ['pytorch_model.bin', bytesSource('pytorch_model.bin', new Uint8Array(4))]])));
    expect(e).toBeInstanceOf(UnsupportedModelError);
  });

  it('a corrupt safetensors header names the shard', async () => {
    const files = sharded();
    const broken = new Uint8Array(64);
    broken[0] = 200;
    files.set('model-00002-of-00002.safetensors', bytesSource('model-00002-of-00002.safetensors', broken));
    const e = await rejection(readHfFolder(files));
    expect((e as ModelFormatError).file).toBe('model-00002-of-00002.safetensors');
  });
});

describe('folderLookup', () => {
  it("finds a file by its path in the folder: exact, or under a prefix (/ or \\), the one in the fewest folders first", () => {
    const [model, pooling, other] = ['model', 'pooling', 'other'].map((n) => bytesSource(n, new Uint8Array(1)));
    const get = folderLookup(new Map([['m/1_Pooling/config.json', pooling], ['m/config.json', model], ['x\\tokenizer.json', other]]));
    expect(get('config.json')).toBe(model);
    expect(get('1_Pooling/config.json')).toBe(pooling);
    expect(get('tokenizer.json')).toBe(other);
    expect(get('modules.json')).toBeUndefined();
    expect(get('g/config.json')).toBeUndefined(); // not a suffix at a folder boundary of any key
    expect(folderLookup(new Map([['config.json', other], ['m/config.json', model]]))('config.json')).toBe(other);
  });
});
