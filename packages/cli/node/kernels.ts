// `intab bench kernels --runtime node`: the kernel lab's checks (every kernel against its CPU twin) and its
// benchmark, the same code the page (examples/kernel-lab) runs, on Dawn's device.

import type { Gpu } from '@intab/gpu';
import { runKernelBench } from '@intab/kernel-lab/bench';
import { runChecks } from '@intab/kernel-lab/checks';

/** Reports a 'check' record per kernel, then the benchmark's records (device, baselines, cases, done). */
export async function runKernels(gpu: Gpu, report: (record: Record<string, unknown>) => void, o: { quick?: boolean; filter?: string } = {}): Promise<void> {
  await runChecks(gpu, (r) => report({ type: 'check', ...r }));
  await runKernelBench(gpu, report, { quick: o.quick, filter: o.filter });
}
