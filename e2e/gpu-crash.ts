// A real GPU crash for the e2e specs: the spec's browser is launched with a flag of its own (crashMarker), and
// killGpuProcessOf finds that browser's `--type=gpu-process` descendant by it (never any other process) and kills it,
// as a crashing driver would take it down; the pages' WebGPU devices are then lost with reason 'unknown'. Chromium
// stops starting a GPU process after a few crashes in a row, so a spec file gets its own browser for every few crashes
// (a spec file of its own, with its own marker: Playwright launches a browser per set of launch options).
import { expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';

/** A Chromium flag that names one spec's browser (an unused crash-dumps folder). */
export function crashMarker(name: string): string {
  return `--crash-dumps-dir=/tmp/intab-${name}-${randomUUID()}`;
}

/** Kills the GPU process of the browser started with `marker` (SIGKILL); returns its pid. */
export function killGpuProcessOf(marker: string): number {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3] }));
  const ours = new Set(rows.filter((r) => r.args.includes(marker) && !r.args.includes('--type=')).map((r) => r.pid));
  expect(ours.size, 'the browser this spec launched').toBe(1);
  // Its descendants (the GPU process is a child of a zygote, itself the browser's child).
  for (let grew = true; grew; ) {
    grew = false;
    for (const r of rows) if (ours.has(r.ppid) && !ours.has(r.pid)) ours.add(r.pid), (grew = true);
  }
  const gpu = rows.filter((r) => ours.has(r.pid) && r.args.includes('--type=gpu-process'));
  expect(gpu.length, "this browser's GPU process").toBe(1);
  process.kill(gpu[0].pid, 'SIGKILL');
  return gpu[0].pid;
}
