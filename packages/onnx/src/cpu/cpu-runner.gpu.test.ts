// The CpuRunner in real headless Chromium, on the kernel users get there (relaxed SIMD's accumulating dot): a token's
// logits do not depend on how its step is put together, bit for bit (test-cpu-runner.ts). No GPU is involved: the gpu
// tier is the one that runs a browser.

import { describe, test } from 'vitest';
import { checkStepInvariance } from './test-cpu-runner.ts';

describe('the CpuRunner in Chromium', () => {
  for (const dtype of ['q4_0', 'q8_0'] as const) {
    test(`${dtype}: one prefill chunk, token by token, batched, forked, rewound, pages written back: the same bits`, () => checkStepInvariance(dtype));
  }
});
