// The ONNX writer and reader: a model with every attribute kind, symbolic and fixed dims, inline and external
// initializers runs in onnxruntime-web with the values worked out by hand, and reads back field for field;
// every truncation of a file and corrupted bytes give OnnxFormatError (and nothing else, byte by byte).

import * as ort from 'onnxruntime-web';
import { describe, expect, test } from 'vitest';
import { OnnxFormatError } from './errors.ts';
import { DataType, ExternalDataBuilder, attr, encodeModel, f32Tensor, i64Tensor, type OnnxModel, type OnnxTensor } from './onnx-proto.ts';
import { readOnnxModel } from './onnx-read.ts';

ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';

const F = DataType.FLOAT;

/**
 * x (batch, 4) → LeakyRelu(α 0.5) → ·W (4, 2) → Split(axis −1) → a, b; c = Cast(a → int64);
 * t = Transpose(Constant(value_floats [1, 2, 3]) reshaped (3, 1)) → (1, 3); g = Gelu_tanh(b).
 */
function sampleModel(weights: (t: OnnxTensor) => OnnxTensor = (t) => t): OnnxModel {
  const w = f32Tensor('W', [4, 2], Float32Array.from([1, 0, 0, 1, 1, 1, 2, -1]));
  return {
    irVersion: 10,
    opsetImports: [{ domain: '', version: 21 }],
    producerName: 'intab-test',
    producerVersion: '1.2.3',
    graph: {
      name: 'sample',
      nodes: [
        { opType: 'LeakyRelu', name: 'leaky', inputs: ['x'], outputs: ['hidden_mid'], attributes: [attr.float('alpha', 0.5)] },
        { opType: 'MatMul', name: 'mm', inputs: ['hidden_mid', 'W'], outputs: ['y'] },
        { opType: 'Split', name: 'split', inputs: ['y', 'sizes'], outputs: ['a', 'b'], attributes: [attr.int('axis', -1)] },
        { opType: 'Cast', name: 'cast', inputs: ['a'], outputs: ['c'], attributes: [attr.int('to', DataType.INT64)] },
        { opType: 'Constant', name: 'const', inputs: [], outputs: ['k'], attributes: [attr.floats('value_floats', [1, 2, 3])] },
        { opType: 'Constant', name: 'shape', inputs: [], outputs: ['kshape'], attributes: [attr.tensor('value', i64Tensor('kshape_value', [2], [3, 1]))] },
        { opType: 'Reshape', name: 'reshape', inputs: ['k', 'kshape'], outputs: ['k2'] },
        { opType: 'Transpose', name: 'transpose', inputs: ['k2'], outputs: ['t'], attributes: [attr.ints('perm', [1, 0])] },
        { opType: 'Gelu', name: 'gelu', inputs: ['b'], outputs: ['g'], attributes: [attr.string('approximate', 'tanh')] },
      ],
      initializers: [weights(w), i64Tensor('sizes', [2], [1, 1])],
      inputs: [{ name: 'x', elemType: F, dims: ['batch', 4] }],
      outputs: [
        { name: 'c', elemType: DataType.INT64, dims: ['batch', 1] },
        { name: 't', elemType: F, dims: [1, 3] },
        { name: 'g', elemType: F, dims: ['batch', 1] },
      ],
    },
  };
}

const gelu = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

async function runSample(bytes: Uint8Array, externalData?: { path: string; data: Uint8Array }) {
  const session = await ort.InferenceSession.create(bytes, externalData ? { externalData: [externalData] } : {});
  // x = [[2, -2, 4, 1], [1, 1, 1, 1]] → leaky [[2, −1, 4, 1], [1, 1, 1, 1]] → y = [[8, 2], [4, 1]]
  const out = await session.run({ x: new ort.Tensor('float32', Float32Array.from([2, -2, 4, 1, 1, 1, 1, 1]), [2, 4]) });
  expect([...(out.c.data as BigInt64Array)]).toEqual([8n, 4n]);
  expect(out.c.dims).toEqual([2, 1]);
  expect([...(out.t.data as Float32Array)]).toEqual([1, 2, 3]);
  expect(out.t.dims).toEqual([1, 3]);
  const g = out.g.data as Float32Array;
  expect(g[0]).toBeCloseTo(gelu(2), 5);
  expect(g[1]).toBeCloseTo(gelu(1), 5);
}

describe('writer', () => {
  test('every attribute kind, negative ints, symbolic dims and int64 initializers run in onnxruntime', async () => {
    await runSample(encodeModel(sampleModel()));
  });

  test('the reader gives back what was written', () => {
    const bytes = encodeModel({ ...sampleModel(), metadata: { 'intab.note': 'héllo' }, opsetImports: [{ domain: '', version: 21 }, { domain: 'com.microsoft', version: 1 }] });
    const info = readOnnxModel(bytes, 'sample.onnx');
    expect(info).toMatchObject({ irVersion: 10, producerName: 'intab-test', producerVersion: '1.2.3', metadata: { 'intab.note': 'héllo' }, externalFiles: [] });
    expect(info.opsetImports).toEqual([{ domain: '', version: 21 }, { domain: 'com.microsoft', version: 1 }]);
    expect(info.graph.name).toBe('sample');
    expect(info.graph.inputs).toEqual([{ name: 'x', elemType: F, dims: ['batch', 4] }]);
    expect(info.graph.outputs).toEqual([
      { name: 'c', elemType: DataType.INT64, dims: ['batch', 1] },
      { name: 't', elemType: F, dims: [1, 3] },
      { name: 'g', elemType: F, dims: ['batch', 1] },
    ]);
    expect(info.graph.nodes.map((n) => `${n.name}:${n.opType}(${n.inputs.join(',')})->${n.outputs.join(',')}`)).toEqual([
      'leaky:LeakyRelu(x)->hidden_mid',
      'mm:MatMul(hidden_mid,W)->y',
      'split:Split(y,sizes)->a,b',
      'cast:Cast(a)->c',
      'const:Constant()->k',
      'shape:Constant()->kshape',
      'reshape:Reshape(k,kshape)->k2',
      'transpose:Transpose(k2)->t',
      'gelu:Gelu(b)->g',
    ]);
    const [w, sizes] = info.graph.initializers;
    expect(w).toMatchObject({ name: 'W', dims: [4, 2], dataType: F });
    expect(new Float32Array(bytes.slice(w.raw!.offset, w.raw!.offset + w.raw!.length).buffer)).toEqual(Float32Array.from([1, 0, 0, 1, 1, 1, 2, -1]));
    expect(sizes).toMatchObject({ name: 'sizes', dims: [2], dataType: DataType.INT64, raw: { length: 16 } });
  });

  test('external data: the bytes move to the data file at aligned offsets, and onnxruntime reads them there', async () => {
    const ext = new ExternalDataBuilder('model.onnx_data', 64);
    const filler = ext.add(f32Tensor('filler', [3], Float32Array.from([7, 8, 9]))); // puts W at offset 64
    expect(filler.external).toEqual({ location: 'model.onnx_data', offset: 0, length: 12 });
    const bytes = encodeModel(sampleModel((t) => ext.add(t)));
    const data = ext.bytes();
    expect(data.length).toBe(64 + 32);
    const info = readOnnxModel(bytes);
    expect(info.externalFiles).toEqual(['model.onnx_data']);
    const w = info.graph.initializers.find((t) => t.name === 'W')!;
    expect(w.raw).toBeUndefined();
    expect(w.external).toEqual({ location: 'model.onnx_data', offset: 64, length: 32 });
    expect(new Float32Array(data.slice(64, 96).buffer)).toEqual(Float32Array.from([1, 0, 0, 1, 1, 1, 2, -1]));
    await runSample(bytes, { path: 'model.onnx_data', data });
    // Without its data file the model cannot load.
    await expect(ort.InferenceSession.create(bytes)).rejects.toThrow();
  });
});

describe('reader: damaged files throw OnnxFormatError', () => {
  const bytes = encodeModel(sampleModel()); // ends with opset_import, the last required field

  test('every truncation, at every byte', () => {
    for (let n = 0; n < bytes.length; n++) {
      let error: unknown;
      try {
        readOnnxModel(bytes.subarray(0, n), 'cut.onnx');
      } catch (e) {
        error = e;
      }
      expect(error, `cut at ${n} of ${bytes.length}`).toBeInstanceOf(OnnxFormatError);
      expect((error as OnnxFormatError).file).toBe('cut.onnx');
    }
    expect(() => readOnnxModel(bytes.subarray(0, bytes.length - 1))).toThrow(/truncated|runs past the end|no ONNX opset/);
  });

  test('a length past the end, an impossible wire type, a dangling value name, raw data that disagrees with dims', () => {
    const damaged = (at: number, value: number) => {
      const b = bytes.slice();
      b[at] = value;
      return b;
    };
    const caught = (b: Uint8Array) => {
      try {
        readOnnxModel(b, 'bad.onnx');
      } catch (e) {
        expect(e).toBeInstanceOf(OnnxFormatError);
        return e as OnnxFormatError;
      }
      throw new Error('expected an OnnxFormatError');
    };
    // ModelProto: ir_version (tag 0x08), producer_name (0x12), producer_version (0x1a), graph (0x3a + length).
    const graphTag = bytes.indexOf(0x3a);
    expect(bytes[graphTag + 1] & 0x80).toBe(0x80); // a two-byte length: raise its high byte
    expect(bytes[graphTag + 2] & 0x80).toBe(0);
    expect(caught(damaged(graphTag + 2, 0x7f)).message).toMatch(/runs past the end/);
    expect(caught(damaged(0, 0x0f)).message).toMatch(/wire type 7/);
    // The second 'hidden_mid' is MatMul's input: one letter changed, it names a value nothing defines.
    const name = new TextEncoder().encode('hidden_mid');
    const second = indexOf(bytes, name, indexOf(bytes, name, 0) + 1);
    const dangling = caught(damaged(second, 'H'.charCodeAt(0)));
    expect(dangling).toMatchObject({ name: 'OnnxFormatError', field: 'graph.node[1].input[0]' });
    expect(dangling.message).toMatch(/'Hidden_mid' \(of MatMul\) is not a graph input/);
    // W's dims are packed [4, 2]: make them [5, 2] and the 32 bytes of raw data no longer fit.
    const dims = indexOf(bytes, Uint8Array.from([0x0a, 0x02, 0x04, 0x02]), 0);
    expect(caught(damaged(dims + 2, 5))).toMatchObject({ field: 'graph.initializer[0]' });
  });

  test('damage inside a node attribute names the attribute: an unterminated packed int, a wrong wire type, a bad tensor', () => {
    const caught = (b: Uint8Array) => {
      try {
        readOnnxModel(b, 'bad.onnx');
      } catch (e) {
        expect(e).toBeInstanceOf(OnnxFormatError);
        return e as OnnxFormatError;
      }
      throw new Error('expected an OnnxFormatError');
    };
    // Transpose's perm = [1, 0]: 'perm', then ints (field 8, packed: tag 0x42, 2 bytes: 01 00).
    const perm = indexOf(bytes, Uint8Array.from([0x42, 0x02, 0x01, 0x00]), indexOf(bytes, new TextEncoder().encode('perm'), 0));
    const unterminated = bytes.slice();
    unterminated[perm + 3] = 0xff; // the last varint of the packed field never ends inside it
    expect(caught(unterminated)).toMatchObject({ field: 'graph.node[7].attribute[0]', offset: perm + 3 });
    const wire = bytes.slice();
    wire[perm] = 0x45; // ints as a 32-bit fixed field: ONNX never writes that
    expect(caught(wire).message).toMatch(/graph\.node\[7\]\.attribute\[0\]: field 'ints' has wire type 5, expected 2/);
    // Constant's value tensor kshape_value (INT64, dims [2]): 16 bytes of raw data; dims [3] would need 24.
    const shape = indexOf(bytes, Uint8Array.from([0x0a, 0x01, 0x02]), indexOf(bytes, new TextEncoder().encode('value'), 0));
    const tensor = bytes.slice();
    tensor[shape + 2] = 3;
    expect(caught(tensor)).toMatchObject({ field: 'graph.node[5].attribute[0].t' });
    expect(caught(tensor).message).toMatch(/raw_data holds 16 bytes but dims \[3\] of type 7 need 24/);
  });

  test('any single corrupted byte gives a model or an OnnxFormatError, never another error', () => {
    let thrown = 0;
    for (let i = 0; i < bytes.length; i++) {
      for (const v of [0x00, 0xff, bytes[i] ^ 0x01]) {
        const b = bytes.slice();
        b[i] = v;
        try {
          readOnnxModel(b);
        } catch (e) {
          expect(e, `byte ${i} = ${v}`).toBeInstanceOf(OnnxFormatError);
          thrown++;
        }
      }
    }
    expect(thrown).toBeGreaterThan(bytes.length); // most corruptions are caught
  });

  test('empty input and a file that is not protobuf', () => {
    expect(() => readOnnxModel(new Uint8Array(0), 'empty.onnx')).toThrow(/empty\.onnx: model: the file is empty/);
    expect(() => readOnnxModel(new TextEncoder().encode('<!DOCTYPE html><html>not found</html>'))).toThrow(OnnxFormatError);
  });
});

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i <= haystack.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  throw new Error('pattern not found');
}
