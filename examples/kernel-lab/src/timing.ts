// Timing of recorded GPU work for the benchmarks: repeat a recording `reps` times inside one compute
// pass, time the pass (timestamp queries when the device has them, else submit→done wall clock),
// and take the median over samples. The repetition count adapts so a sample lasts ~`targetMs`.

import { Profiler, type Gpu } from '@intab/gpu';

export interface Timing {
  /** Median milliseconds per repetition. */
  median_ms: number;
  /** Fastest sample, milliseconds per repetition. */
  min_ms: number;
  reps: number;
  samples: number;
  clock: 'timestamp' | 'wall-clock';
}

export interface TimingOptions {
  samples?: number;
  targetMs?: number;
  maxReps?: number;
}

export async function timeRecording(gpu: Gpu, record: (pass: GPUComputePassEncoder) => void, o: TimingOptions = {}): Promise<Timing> {
  const samples = o.samples ?? 5;
  const target = o.targetMs ?? 60;
  const profiler = new Profiler(gpu, { maxPasses: 4 });
  try {
    const once = async (reps: number) => {
      const encoder = gpu.device.createCommandEncoder({ label: 'bench' });
      const pass = encoder.beginComputePass(profiler.pass('bench'));
      for (let i = 0; i < reps; i++) record(pass);
      pass.end();
      const [t] = await profiler.submit(encoder);
      gpu.uniforms.reset();
      return t.ms / reps;
    };
    await once(1); // warm-up: pipeline creation, first-touch of buffers
    const estimate = Math.max(await once(1), 1e-3);
    const reps = Math.max(1, Math.min(o.maxReps ?? 200, Math.round(target / estimate)));
    const times: number[] = [];
    for (let s = 0; s < samples; s++) times.push(await once(reps));
    times.sort((a, b) => a - b);
    return { median_ms: times[times.length >> 1], min_ms: times[0], reps, samples, clock: profiler.mode };
  } finally {
    profiler.destroy();
  }
}
