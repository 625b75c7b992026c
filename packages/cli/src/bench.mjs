// @ts-check
// `intab bench kernels`: runs examples/kernel-lab's benchmark headless and prints its records.
import { runPage } from './browser.mjs';

const COLUMNS = ['kernel', 'dtype', 'model', 'op', 'shape', 'median_ms', 'gbps', 'gflops', 'roofline_ratio', 'read_ratio'];

/** @param {Record<string, string | boolean>} flags */
export async function benchKernels(flags) {
  const query = new URLSearchParams({ run: 'bench' });
  if (flags.quick) query.set('quick', '1');
  if (typeof flags.filter === 'string') query.set('filter', flags.filter);
  const timeoutMs = Number(flags.timeout ?? 3600) * 1000;
  let failed = false;
  let header = false;
  await runPage({
    path: `/examples/kernel-lab/?${query}`,
    timeoutMs,
    headed: Boolean(flags.headed),
    onRecord(r) {
      if (r.type === 'error') failed = true;
      if (r.type === 'finished') return;
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(r)}\n`);
      } else if (r.type === 'case') {
        if (!header) {
          console.log(COLUMNS.join('\t'));
          header = true;
        }
        console.log(COLUMNS.map((c) => r[c]).join('\t'));
      } else if (r.type !== 'done') {
        console.log(Object.entries(r).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join(' '));
      }
    },
  });
  return failed ? 1 : 0;
}
