// Creating sessions from bad .onnx bytes, with onnxruntime-web's wasm EP in Node: a truncated file, a corrupted
// byte, an op nothing implements (in the ONNX domain, in ORT's contrib domain, at an opset it lacks) and weights
// kept in an external file that was not given each end in a typed error that names the problem; a sound graph
// still loads. 'onnx-webgpu' (ORT's JSPI build) where WebAssembly JSPI is missing is refused before anything loads.
// A host's own onnxruntime (OrtRuntime, as the CLI's Node runtime hands in onnxruntime-node) makes the sessions, on the
// provider it names; a backend it has no provider for is refused before anything loads.

import { afterEach, describe, expect, test } from 'vitest';
import { bytesSource, type ByteSource, type ModelFiles } from '@intab/model';
import { DataType, encodeModel, ExternalDataBuilder, f32Tensor, type OnnxNode, type OnnxTensor } from './onnx-proto.ts';
import { OnnxFormatError, OnnxUnsupportedError } from './errors.ts';
import { checkOrtBuild, createSession, hasJspi, loadOrt, providerOf, type OrtRuntime } from './session.ts';
import { loadOnnxRunner } from './load.ts';

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

describe("'onnx-webgpu' runs ORT's JSPI build, which needs WebAssembly.Suspending", () => {
  // Node 20 has no JSPI; the tests set or remove WebAssembly.Suspending themselves, whatever the Node.
  const own = Object.getOwnPropertyDescriptor(WebAssembly, 'Suspending');
  const jspi = (present: boolean) => {
    if (present) Object.defineProperty(WebAssembly, 'Suspending', { value: class Suspending {}, configurable: true, writable: true });
    else delete (WebAssembly as { Suspending?: unknown }).Suspending;
  };
  afterEach(() => {
    if (own) Object.defineProperty(WebAssembly, 'Suspending', own);
    else delete (WebAssembly as { Suspending?: unknown }).Suspending;
  });

  test('without it: OnnxUnsupportedError that says what to use, from every way in, before the model is read', async () => {
    jspi(false);
    expect(hasJspi()).toBe(false);
    const refused = (err: unknown) => {
      expect(err).toBeInstanceOf(OnnxUnsupportedError);
      const e = err as OnnxUnsupportedError;
      expect(e.feature).toBe("backend 'onnx-webgpu'");
      expect(e.code).toBe('onnx_unsupported');
      expect(e.message).toContain('WebAssembly.Suspending');
      for (const other of ["'auto'", "'onnx-wasm'", "'webgpu'"]) expect(e.message).toContain(other);
    };
    let thrown: unknown;
    try {
      checkOrtBuild('onnx-webgpu');
    } catch (e) {
      thrown = e;
    }
    refused(thrown);
    refused(await loadOrt('onnx-webgpu').catch((e) => e));
    refused(await createSession(model('Relu').bytes, { backend: 'onnx-webgpu' }).catch((e) => e));
    // An ONNX folder: not one byte of the graph is read.
    let reads = 0;
    const counted = (s: ByteSource): ByteSource => ({ name: s.name, size: s.size, read: (...a) => (reads++, s.read(...a)) });
    const folder: ModelFiles = { config: {} as ModelFiles['config'], tensors: new Map(), onnx: { model: counted(bytesSource('model.onnx', model('Relu').bytes)), externalData: new Map() } };
    refused(await loadOnnxRunner(folder, { backend: 'onnx-webgpu' }).catch((e) => e));
    expect(reads).toBe(0);
    // The wasm backend is ORT's other build, and needs nothing of the kind.
    expect(() => checkOrtBuild('onnx-wasm')).not.toThrow();
    const { session } = await createSession(model('Relu').bytes, { backend: 'onnx-wasm' });
    await session.release();
  });

  test('with it, the backend is not refused', () => {
    jspi(true);
    expect(hasJspi()).toBe(true);
    expect(() => checkOrtBuild('onnx-webgpu')).not.toThrow();
  });
});

describe("the host's onnxruntime (OrtRuntime): what a Node host hands in instead of onnxruntime-web's builds", () => {
  /** A runtime over a real onnxruntime module (here onnxruntime-web's wasm build, named as a host would name its own). */
  const host = async (providers: OrtRuntime['providers']): Promise<OrtRuntime> => ({ name: 'host-ort 9.9.9', ort: await import('onnxruntime-web/wasm'), providers, threads: 1, sessionOptions: { intraOpNumThreads: 1 } });

  test('sessions run on the module handed in, on the provider it names for the backend, and say so', async () => {
    const runtime = await host({ 'onnx-wasm': 'wasm' });
    const made = await createSession(model('Relu').bytes, { backend: 'onnx-wasm', runtime });
    expect(made.ort).toBe(runtime.ort);
    expect(made.runs).toEqual({ runtime: 'host-ort 9.9.9', provider: 'wasm', threads: 1 });
    expect(made.kvLocation).toBe('cpu');
    const { y } = await made.session.run({ x: new runtime.ort.Tensor('float32', Float32Array.from([2, 1]), [2]) });
    expect(Array.from(y.data as Float32Array)).toEqual([3, 0]); // relu(x + [1, -3])
    await made.session.release();
    expect(providerOf('onnx-wasm', runtime)).toBe('wasm');
    // Without a runtime: onnxruntime-web's own build and provider.
    expect(providerOf('onnx-wasm')).toBe('wasm');
  });

  test('a backend the runtime has no provider for is refused by name, before a byte of the model is read', async () => {
    const runtime = await host({ 'onnx-wasm': 'wasm' });
    const refused = (err: unknown) => {
      expect(err).toBeInstanceOf(OnnxUnsupportedError);
      expect((err as OnnxUnsupportedError).feature).toBe("backend 'onnx-webgpu'");
      expect((err as Error).message).toMatch(/host-ort 9\.9\.9 has no execution provider for it here: load the model with backend 'onnx-wasm'/);
    };
    let thrown: unknown;
    try {
      providerOf('onnx-webgpu', runtime);
    } catch (e) {
      thrown = e;
    }
    refused(thrown);
    let reads = 0;
    const counted = (s: ByteSource): ByteSource => ({ name: s.name, size: s.size, read: (...a) => (reads++, s.read(...a)) });
    const folder: ModelFiles = { config: {} as ModelFiles['config'], tensors: new Map(), onnx: { model: counted(bytesSource('model.onnx', model('Relu').bytes)), externalData: new Map() } };
    refused(await loadOnnxRunner(folder, { backend: 'onnx-webgpu', runtime }).catch((e) => e));
    expect(reads).toBe(0);
  });
});
