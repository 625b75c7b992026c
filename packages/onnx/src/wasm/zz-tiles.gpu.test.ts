import { test } from 'vitest';
import { CpuMatmul } from './cpu-matmul.ts';
import { benchWeights } from './test-cpu-matmul-bench.ts';
import { randomF32 } from '@intab/gpu/reference';

test('tiles streamed', async () => {
  const lines: string[] = [];
  const configs: [string, object][] = [
    ['relaxed/split4', { kernel: 'relaxed', layout: 'split4' }], ['relaxed/split4w', { kernel: 'relaxed', layout: 'split4w' }], ['u8/split4', { kernel: 'relaxed-u8', layout: 'split4' }], ['u8/split4w', { kernel: 'relaxed-u8', layout: 'split4w' }],
  ];
  for (const dtype of ['q8_0', 'q4_0'] as const) {
    const [n, k] = [1536, 576];
    const blocks = benchWeights(dtype, n, k);
    for (const count of [300]) {
      const cpus = await Promise.all(configs.map(([, o]) => CpuMatmul.create({ initialPages: 8192, ...o })));
      const wss = cpus.map((cpu) => Array.from({ length: count }, () => cpu.weight(dtype, blocks, n, k)));
      for (const m of [1, 2, 5, 8, 16, 32]) {
        const row: string[] = [];
        for (let i = 0; i < configs.length; i++) {
          const cpu = cpus[i], ws = wss[i];
          const x = cpu.upload(new Uint8Array(randomF32(m * k, 5).buffer));
          const s = cpu.scratchBytes(m, k);
          const xq = cpu.alloc(s.xq), xd = cpu.alloc(s.xd), y = cpu.alloc(4 * m * n);
          cpu.quantizeX(x, xq, xd, (m * k) / 32);
          const call = () => { for (const w of ws) cpu.raw(w, xq, xd, y, m); };
          for (let j = 0; j < 3; j++) call();
          let best = Infinity;
          for (let r = 0; r < 5; r++) { const t = performance.now(); for (let j = 0; j < 300 / count; j++) call(); best = Math.min(best, performance.now() - t); }
          row.push(`${configs[i][0]} ${(best / m / 300 * 1000).toFixed(1)}`);
        }
        lines.push(`${dtype} ${count} M=${m} us/token/matrix: ${row.join('  ')}`);
      }
    }
  }
  console.log(lines.join('\n'));
}, 900_000);
