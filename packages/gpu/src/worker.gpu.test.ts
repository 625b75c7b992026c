import { expect, test } from 'vitest';
import { expectClose } from '@intab/testing/gpu';

test('kernels run inside a dedicated Worker and match the CPU twins', async () => {
  const worker = new Worker(new URL('./test-worker.ts', import.meta.url), { type: 'module' });
  const result = await new Promise<any>((resolve, reject) => {
    worker.onmessage = (e) => resolve(e.data);
    worker.onerror = (e) => reject(new Error(e.message));
    worker.postMessage('run');
  });
  worker.terminate();
  expect(result.ok, result.message).toBe(true);
  expect(result.isWorker).toBe(true);
  expectClose(result.got, result.want, { atol: 1e-4, rtol: 1e-4 });
});
