// The kernel lab page: correctness checks and benchmarks on this browser's GPU, shown as tables.
// `?run=checks`, `?run=bench` or `?run=all` start automatically (`&quick=1` for a smoke run); when
// driven by `intab bench kernels`, every record also goes to window.__intabReport.

import { requestGpu, type Gpu } from '@intab/gpu';
import { runChecks, type CheckResult } from './checks.ts';
import { runKernelBench, type BenchRecord } from './bench.ts';

declare global {
  interface Window {
    __intabReport?: (record: unknown) => void;
    __intabDone?: boolean;
  }
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const params = new URLSearchParams(location.search);

function emit(record: unknown): void {
  window.__intabReport?.(record);
}

function status(text: string): void {
  $('status').textContent = text;
}

function addCheckRow(r: CheckResult): void {
  const table = $<HTMLTableElement>('checks');
  table.hidden = false;
  const tr = document.createElement('tr');
  tr.innerHTML = `<td>${r.name}</td><td>${r.maxError.toExponential(2)}</td><td>${r.tolerance}</td><td class="${r.ok ? 'ok' : 'bad'}">${r.ok ? 'pass' : 'FAIL'}</td>`;
  table.tBodies[0].append(tr);
}

function addBenchRow(r: BenchRecord): void {
  if (r.type !== 'case') return;
  const table = $<HTMLTableElement>('results');
  table.hidden = false;
  const tr = document.createElement('tr');
  const cells = [r.kernel, r.dtype, `${r.model}.${r.op}`, r.shape, r.median_ms, r.gbps, r.gflops, r.roofline_ratio, r.read_ratio];
  tr.innerHTML = cells.map((c, i) => `<td class="${i < 3 ? 'l' : ''}">${c}</td>`).join('');
  table.tBodies[0].append(tr);
}

async function checks(gpu: Gpu): Promise<void> {
  status('Running correctness checks…');
  const results = await runChecks(gpu, (r) => {
    addCheckRow(r);
    emit({ type: 'check', ...r });
  });
  const failed = results.filter((r) => !r.ok).length;
  status(`Checks: ${results.length - failed} passed, ${failed} failed.`);
}

async function bench(gpu: Gpu, quick: boolean): Promise<void> {
  status('Benchmarking… (large shapes take a while on software adapters)');
  await runKernelBench(
    gpu,
    (r) => {
      addBenchRow(r);
      emit(r);
    },
    { quick, filter: params.get('filter') ?? undefined },
  );
  status('Benchmarks done.');
}

async function main(): Promise<void> {
  let gpu: Gpu;
  try {
    gpu = await requestGpu({ onLost: (e) => status(e.message) });
  } catch (err) {
    $('device').textContent = (err as Error).message;
    emit({ type: 'error', name: (err as Error).name, message: (err as Error).message });
    window.__intabDone = true;
    return;
  }
  const info = gpu.adapterInfo;
  const feats = Object.entries(gpu.features).filter(([, v]) => v).map(([k]) => k);
  $('device').textContent = `${info.vendor || 'unknown vendor'} ${info.architecture} ${info.description} — features: ${feats.join(', ') || 'none'}`;
  const checkBtn = $<HTMLButtonElement>('check');
  const benchBtn = $<HTMLButtonElement>('bench');
  const quickBox = $<HTMLInputElement>('quick');
  quickBox.checked = params.get('quick') === '1';
  const guard = (fn: () => Promise<void>) => async () => {
    checkBtn.disabled = benchBtn.disabled = true;
    try {
      await fn();
    } catch (err) {
      status(`Error: ${(err as Error).message}`);
      emit({ type: 'error', name: (err as Error).name, message: (err as Error).message });
    } finally {
      checkBtn.disabled = benchBtn.disabled = false;
    }
  };
  checkBtn.onclick = guard(() => checks(gpu));
  benchBtn.onclick = guard(() => bench(gpu, quickBox.checked));
  checkBtn.disabled = benchBtn.disabled = false;

  const run = params.get('run');
  if (run === 'checks' || run === 'all') await guard(() => checks(gpu))();
  if (run === 'bench' || run === 'all') await guard(() => bench(gpu, quickBox.checked))();
  window.__intabDone = true;
  emit({ type: 'finished' });
}

void main();
