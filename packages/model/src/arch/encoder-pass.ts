// One pass of an encoder runner on the GPU (arch/bert.ts, arch/decoder-embed.ts): the recorded dispatches in one
// compute pass, the result's first n × dims values read back, and validation and out-of-memory errors caught by error
// scopes around it and thrown as a GpuValidationError naming the runner. A recording that throws ends the pass and pops
// the scopes first, so the device is left as it was.

import { GpuValidationError, type Gpu } from '@intab/gpu';

/**
 * Records a pass with `record`, submits it and reads back n vectors of `dims` values from `result`.
 * @example
 * return runEncoderPass(gpu, 'bert', (pass) => record(pass, tokens, n), s.result, n, C);
 */
export async function runEncoderPass(gpu: Gpu, tag: string, record: (pass: GPUComputePassEncoder) => void, result: GPUBuffer, n: number, dims: number): Promise<Float32Array[]> {
  gpu.device.pushErrorScope('out-of-memory');
  gpu.device.pushErrorScope('validation');
  const encoder = gpu.device.createCommandEncoder({ label: `${tag}.pass` });
  const pass = encoder.beginComputePass({ label: `${tag}.pass` });
  try {
    record(pass);
    pass.end();
  } catch (err) {
    pass.end();
    gpu.uniforms.reset();
    await Promise.all([gpu.device.popErrorScope(), gpu.device.popErrorScope()]);
    throw err;
  }
  const ticket = gpu.readback.encodeCopy(encoder, result, 0, n * dims * 4);
  gpu.submit([encoder.finish()]);
  gpu.uniforms.reset();
  const [validation, oom] = await Promise.all([gpu.device.popErrorScope(), gpu.device.popErrorScope()]);
  const vectors = new Float32Array(await ticket.read());
  const err = validation ?? oom;
  if (err) throw new GpuValidationError(validation ? 'validation' : 'out-of-memory', `${tag}.encode`, err.message);
  return Array.from({ length: n }, (_, b) => vectors.slice(b * dims, (b + 1) * dims));
}
