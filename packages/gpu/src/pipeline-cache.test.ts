// The binding limits a pipeline layout is checked against before WebGPU sees it (compatibility-mode adapters, such
// as Dawn's OpenGL backend in Node, have lower defaults).
import { describe, expect, test } from 'vitest';
import { LimitError } from './errors.ts';
import { checkBindingLimits } from './pipeline-cache.ts';

describe('checkBindingLimits', () => {
  const limits = { maxStorageBuffersPerShaderStage: 8, maxUniformBuffersPerShaderStage: 12 };

  test('the widest kernel layout (params + 8 storage buffers) fits the WebGPU default', () => {
    expect(() => checkBindingLimits(limits, ['uniform', 'read', 'read', 'read', 'read', 'read', 'read', 'storage', 'storage'], 'attention')).not.toThrow();
  });

  test('one storage buffer over the limit is a LimitError naming the kernel, the count and the limit', () => {
    const bindings = ['uniform', ...Array<'read'>(8).fill('read'), 'storage'] as const;
    let err: unknown;
    try {
      checkBindingLimits(limits, bindings, 'gemv (q4_0)');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LimitError);
    expect(err).toMatchObject({ limit: 'maxStorageBuffersPerShaderStage', requested: 9, allowed: 8 });
    expect((err as Error).message).toContain("gemv (q4_0)'s bind group needs 9 but this adapter's maxStorageBuffersPerShaderStage is 8");
  });
});
