// `intab bench kernels`: runs examples/kernel-lab's benchmark headless and prints its records (records.ts). With
// --runtime node the Node runtime (packages/cli/node) runs the same lab code on Dawn instead.
import type { Flags } from './args.ts';
import { runPage } from './browser.ts';
import { kernelRecordPrinter } from './records.ts';

export async function benchKernels(flags: Flags): Promise<number> {
  const query = new URLSearchParams({ run: 'bench' });
  if (flags.quick) query.set('quick', '1');
  if (typeof flags.filter === 'string') query.set('filter', flags.filter);
  const timeoutMs = Number(flags.timeout ?? 3600) * 1000;
  const printer = kernelRecordPrinter(flags);
  await runPage({
    path: `/examples/kernel-lab/?${query}`,
    timeoutMs,
    headed: Boolean(flags.headed),
    onRecord: printer.onRecord,
  });
  return printer.failed() ? 1 : 0;
}
