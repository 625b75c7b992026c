// Wasm threads in Node (worker_threads; cpu-matmul.gpu.test.ts runs the same in Chromium): every kernel's products on
// 2 and 3 threads equal one thread's bit for bit, the kernels' row ranges write only their rows, and a helper whose
// call traps fails the call with the trap's message instead of hanging it.

import v8 from 'node:v8';
import { describe, expect, test } from 'vitest';
import { availableKernels, relaxedSimdForms } from './cpu-matmul.ts';
import { checkThreads } from './test-cpu-matmul.ts';
import { I32, WasmModule } from './wasm-module.ts';
import { WasmThreads, isShared, sharedMemory, threadPlan, threadsUnavailable } from './wasm-threads.ts';

if (relaxedSimdForms().length === 0) v8.setFlagsFromString('--experimental-wasm-relaxed-simd');

describe('wasm threads', () => {
  test('Node has them', () => {
    expect(threadsUnavailable()).toBeUndefined();
    expect(threadPlan(3)).toEqual({ threads: 3 });
    expect(isShared(sharedMemory(1))).toBe(true);
    expect(isShared(new WebAssembly.Memory({ initial: 1 }))).toBe(false);
  });

  test('every kernel on 2 and 3 threads gives one thread\'s products, bit for bit; row ranges write only their rows', { timeout: 120_000 }, async () => {
    await checkThreads(availableKernels(), 2);
    await checkThreads(availableKernels().slice(0, 1), 3);
  });

  test('each helper runs its call over the shared memory; a trap fails the call with its message, and then the threads are closed', async () => {
    const mod = new WasmModule({ memoryPages: 1, shared: true });
    // put(p, v): memory[p] = v; trap(): divides by zero
    mod.func('put', [I32, I32], []).get(0).get(1).i32_store(0);
    mod.func('trap', [], []).i32_const(1).i32_const(0).i32_div_u().drop();
    const memory = sharedMemory(1);
    const module = await WebAssembly.compile(mod.encode());
    const own = new WebAssembly.Instance(module, { env: { memory } }).exports as { put: (p: number, v: number) => void };
    const threads = await WasmThreads.start(memory, [module], 3);
    try {
      expect(threads.threads).toBe(4);
      const put = threads.fn(module, 'put');
      const words = new Int32Array(memory.buffer, 0, 4);
      for (let round = 1; round <= 200; round++) {
        threads.run(put, [[4, 10 * round + 1], [8, 10 * round + 2], [12, 10 * round + 3]], () => own.put(0, 10 * round));
        expect([...words]).toEqual([10 * round, 10 * round + 1, 10 * round + 2, 10 * round + 3]);
      }
      expect(() => threads.fn(module, 'nothing')).toThrow(/no function nothing/);
      expect(() => threads.run(threads.fn(module, 'trap'), [[], [], []], () => {})).toThrow(/a CPU kernel thread failed: .*divi/);
      expect(threads.closed).toBe(true);
      expect(() => threads.run(put, [[0, 0], [0, 0], [0, 0]], () => {})).toThrow(/closed/);
    } finally {
      threads.close();
    }
  });

  test('start refuses a memory that is not shared', async () => {
    const mod = new WasmModule({ memoryPages: 1 });
    mod.func('nop', [], []);
    const module = await WebAssembly.compile(mod.encode());
    await expect(WasmThreads.start(new WebAssembly.Memory({ initial: 1 }), [module], 1)).rejects.toThrow(/shared memory/);
  });
});
