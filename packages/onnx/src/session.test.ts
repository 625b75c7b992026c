// Creating sessions from bad .onnx bytes, with onnxruntime-web's wasm EP in Node: a truncated file, a corrupted
// byte, an op nothing implements (in the ONNX domain, in ORT's contrib domain, at an opset it lacks) and weights
// kept in an external file that was not given each end in a typed error that names the problem; a sound graph
// still loads.

import { describe, expect, test } from 'vitest';
import { DataType, encodeModel, ExternalDataBuilder, f32Tensor, type OnnxNode, type OnnxTensor } from './onnx-proto.ts';
import { OnnxFormatError, OnnxUnsupportedError } from './errors.ts';
import { createSession } from './session.ts';

/** y = op(x + w) over a (2) f32 input: one initializer, one node of `op` in `domain` at `version`. */
function model(op: string, o: { domain?: string; version?: number; external?: boolean } = {}): { bytes: Uint8Array; data?: Uint8Array } {
  let w: OnnxTensor = f32Tensor('w', [2], Float32Array.from([1, -3]));
  let data: Uint8Array | undefined;
  if (o.external) {
    const b = new ExternalDataBuilder('model.onnx_data');
    w = b.add(w);
    data = b.bytes();
  }
  const nodes: OnnxNode[] = [
    { opType: 'Add', name: 'add', inputs: ['x', 'w'], outputs: ['s'] },
    { opType: op, domain: o.domain ?? '', name: 'the_op', inputs: ['s'], outputs: ['y'] },
  ];
  const opsets = [{ domain: '', version: o.domain ? 21 : (o.version ?? 21) }, ...(o.domain ? [{ domain: o.domain, version: o.version ?? 1 }] : [])];
  const bytes = encodeModel({
    irVersion: 10,
    opsetImports: opsets,
    graph: { name: 'g', nodes, initializers: [w], inputs: [{ name: 'x', elemType: DataType.FLOAT, dims: [2] }], outputs: [{ name: 'y', elemType: DataType.FLOAT, dims: [2] }] },
  });
  return { bytes, data };
}

describe('createSession refuses bad models with typed errors', () => {
  test('a sound graph loads and runs, with its external data given', async () => {
    const { bytes, data } = model('Relu', { external: true });
    const { session } = await createSession(bytes, { backend: 'onnx-wasm', externalData: new Map([['model.onnx_data', data!]]) });
    expect(session.inputNames).toEqual(['x']);
    await session.release();
  });

  test('a truncated file and a corrupted byte: OnnxFormatError with the place', async () => {
    const { bytes } = model('Relu');
    const truncated = await createSession(bytes.slice(0, bytes.length - 7), { backend: 'onnx-wasm', file: 'cut.onnx' }).catch((e) => e);
    expect(truncated).toBeInstanceOf(OnnxFormatError);
    expect(truncated.file).toBe('cut.onnx');
    expect(truncated.message).toMatch(/cut\.onnx: .*(at byte \d+)?/);
    // A field's wire type broken: the first byte of the model's first field (ir_version, a varint) becomes a length-delimited tag of a huge length.
    const corrupted = bytes.slice();
    corrupted[0] = 0x0a;
    corrupted[1] = 0xff;
    const err = await createSession(corrupted, { backend: 'onnx-wasm' }).catch((e) => e);
    expect(err).toBeInstanceOf(OnnxFormatError);
  });

  test('ops nothing implements: OnnxUnsupportedError naming the op', async () => {
    for (const [op, o] of [
      ['NoSuchOp', {}],
      ['NoSuchContribOp', { domain: 'com.microsoft' }],
      ['Relu', { domain: 'ai.onnx.ml' }],
    ] as const) {
      const err = await createSession(model(op, o).bytes, { backend: 'onnx-wasm', file: 'odd.onnx' }).catch((e) => e);
      expect(err, op).toBeInstanceOf(OnnxUnsupportedError);
      expect(err.feature).toBe(`op ${o.domain === 'com.microsoft' ? 'com.microsoft:' : ''}${op}`);
      expect(err.message).toContain('odd.onnx uses');
      expect(err.message).toContain("try backend 'onnx-webgpu'");
    }
  });

  test('weights in an external file that was not given: OnnxFormatError about the external data', async () => {
    const { bytes } = model('Relu', { external: true });
    const err = await createSession(bytes, { backend: 'onnx-wasm', file: 'model.onnx' }).catch((e) => e);
    expect(err).toBeInstanceOf(OnnxFormatError);
    expect(err.field).toBe('external data');
  });
});
