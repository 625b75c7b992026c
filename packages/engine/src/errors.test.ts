// Errors survive the worker boundary: serializeError → structuredClone (what postMessage does) →
// deserializeError gives the same class, name, message, fields and cause, for the engine's, the model's and
// the GPU runtime's errors; AbortError comes back as a DOMException; unknown errors keep their name.
import { describe, expect, test } from 'vitest';
import { GpuValidationError, ShapeError } from '@intab/gpu';
import { ContextLengthExceededError, InvalidRequestError, deserializeError, isSerializedError, registerErrorClass, serializeError } from './errors.ts';

const roundTrip = (e: unknown) => deserializeError(structuredClone(serializeError(e)));

describe('serializeError / deserializeError', () => {
  test('engine errors keep class, name, message and fields', () => {
    const e = new ContextLengthExceededError({ promptTokens: 500, maxTokens: 100, limit: 512, limitedBy: 'context', reason: 'max-tokens' });
    const back = roundTrip(e);
    expect(back).toBeInstanceOf(ContextLengthExceededError);
    expect(back).toMatchObject({ name: 'ContextLengthExceededError', message: e.message, promptTokens: 500, maxTokens: 100, limit: 512, limitedBy: 'context', reason: 'max-tokens', pinnedPages: 0, truncatedMessages: 0 });
    const inv = roundTrip(new InvalidRequestError('topLogprobs', 30, 'an integer in [0, 20]'));
    expect(inv).toBeInstanceOf(InvalidRequestError);
    expect(inv).toMatchObject({ field: 'topLogprobs', value: '30', expected: 'an integer in [0, 20]' });
    expect(inv.message).toMatch(/topLogprobs.*30/);
  });
  test('GPU errors and causes cross too', () => {
    const cause = new ShapeError('gemv', 'x', '(64)', '(32)');
    const e = new GpuValidationError('validation', 'Runner.step', 'bad binding');
    Object.defineProperty(e, 'cause', { value: cause });
    const back = roundTrip(e);
    expect(back).toBeInstanceOf(GpuValidationError);
    expect(back.message).toBe(e.message);
    expect(back.cause).toBeInstanceOf(ShapeError);
    expect(back.cause).toMatchObject({ kernel: 'gemv', argument: 'x', expected: '(64)', actual: '(32)' });
  });
  test('AbortError becomes a DOMException; unknown names and non-errors survive as Errors', () => {
    const abort = roundTrip(new DOMException('user cancelled', 'AbortError'));
    expect(abort).toBeInstanceOf(DOMException);
    expect(abort).toMatchObject({ name: 'AbortError', message: 'user cancelled' });
    class CustomError extends Error {
      code = 7;
      constructor() {
        super('custom');
        this.name = 'CustomError';
      }
    }
    const unknown = roundTrip(new CustomError());
    expect(unknown).toBeInstanceOf(Error);
    expect(unknown).toMatchObject({ name: 'CustomError', message: 'custom', code: 7 });
    registerErrorClass('CustomError', CustomError);
    expect(roundTrip(new CustomError())).toBeInstanceOf(CustomError);
    expect(roundTrip('plain string')).toMatchObject({ name: 'Error', message: 'plain string' });
    expect(isSerializedError(serializeError(new Error('x')))).toBe(true);
    expect(isSerializedError({ name: 'Error' })).toBe(false);
  });
});
