// Typed errors of the GPU runtime, each declared with errorClass (its name, stable `code` and fields in one place):
// each carries the fields a caller needs to react and says in its message what to do. They are plain data so they
// survive structured cloning; GPU_ERRORS lists them for the worker's error registry.

import { IntabError, errorClass } from '@intab/errors';

/** Base class: every error thrown by @intab/gpu is an IntabGpuError. */
export class IntabGpuError extends errorClass(IntabError, 'IntabGpuError', 'gpu_error') {
  constructor(message: string, options?: { cause?: unknown }) {
    super({}, message, options);
  }
}

/** `navigator.gpu` is missing or no adapter could be obtained. */
export class WebGpuUnavailableError extends errorClass(IntabGpuError, 'WebGpuUnavailableError', 'webgpu_unavailable')<{
  readonly reason: 'no-navigator-gpu' | 'no-adapter' | 'request-device-failed';
}> {
  constructor(reason: WebGpuUnavailableError['reason'], detail = '', options?: { cause?: unknown }) {
    const what = {
      'no-navigator-gpu': 'this browser does not expose WebGPU (navigator.gpu is undefined)',
      'no-adapter': 'the browser exposes WebGPU but returned no GPU adapter',
      'request-device-failed': 'the GPU adapter refused to create a device',
    }[reason];
    super(
      { reason },
      `WebGPU is unavailable: ${what}${detail ? ` (${detail})` : ''}. ` +
        'Use a recent Chrome/Edge (113+) or Safari 26+, serve the page over https or localhost, ' +
        'and check chrome://gpu; headless Chromium needs --enable-unsafe-webgpu.',
      options,
    );
  }
}

/** The GPU device was lost (driver reset, tab backgrounded too long, destroy()). */
export class DeviceLostError extends errorClass(IntabGpuError, 'DeviceLostError', 'device_lost')<{
  readonly reason: string;
}> {
  /** `advice`: what the caller should do (the engine, which recovers by itself, says so). */
  constructor(reason: string, message: string, advice = 'All GPU buffers are gone: create a new runtime with requestGpu() and reload the model.') {
    super({ reason }, `The GPU device was lost (${reason}: ${message || 'no message'}). ${advice}`);
  }
}

/** A tensor argument has the wrong shape, size or alignment. */
export class ShapeError extends errorClass(IntabGpuError, 'ShapeError', 'invalid_shape')<{
  readonly kernel: string;
  readonly argument: string;
  readonly expected: string;
  readonly actual: string;
}> {
  constructor(kernel: string, argument: string, expected: string, actual: string) {
    super({ kernel, argument, expected, actual }, `${kernel}: argument '${argument}' should be ${expected} but is ${actual}. Fix the caller's shapes.`);
  }
}

/** A weight dtype or kernel variant this runtime does not implement, or a feature the device lacks. */
export class UnsupportedError extends errorClass(IntabGpuError, 'UnsupportedError', 'gpu_unsupported')<{
  readonly what: string;
}> {
  constructor(what: string, advice: string) {
    super({ what }, `${what} is not supported: ${advice}`);
  }
}

/** An allocation or binding over the device's limits. */
export class LimitError extends errorClass(IntabGpuError, 'LimitError', 'gpu_limit_exceeded')<{
  readonly limit: string;
  readonly requested: number;
  readonly allowed: number;
}> {
  /** `unit` 'count' for limits that count things (storage buffers per shader stage), not bytes. */
  constructor(what: string, limit: string, requested: number, allowed: number, advice: string, unit: 'bytes' | 'count' = 'bytes') {
    const f = unit === 'bytes' ? formatBytes : String;
    super({ limit, requested, allowed }, `${what} needs ${f(requested)} but this adapter's ${limit} is ${f(allowed)}: ${advice}`);
  }
}

/** A GPU validation or out-of-memory error captured by an error scope. */
export class GpuValidationError extends errorClass(IntabGpuError, 'GpuValidationError', 'gpu_validation_failed')<{
  readonly kind: 'validation' | 'out-of-memory' | 'internal';
}> {
  constructor(kind: GpuValidationError['kind'], label: string, message: string) {
    super(
      { kind },
      `GPU ${kind} error in ${label}: ${message}` +
        (kind === 'out-of-memory'
          ? ' — free memory (smaller context or quantization) and retry.'
          : ' — this is a bug in intab: please report it with this message.'),
    );
  }
}

export function formatBytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  if (n >= 2 ** 10) return `${(n / 2 ** 10).toFixed(1)} KiB`;
  return `${n} B`;
}

/** What a model needs on the GPU, in bytes, as computed before its upload. */
export interface GpuMemoryNeeds {
  weights: number;
  kv: number;
  /** The step's activations and the sampler's scratch, allocated once at load. */
  activations: number;
}

/**
 * A GPU allocation failed for lack of memory while a model loaded (an 'out-of-memory' error scope caught it).
 * Everything the load had allocated is freed before this is thrown, so the same device can load something smaller.
 */
export class GpuOutOfMemoryError extends errorClass(IntabGpuError, 'GpuOutOfMemoryError', 'gpu_out_of_memory')<{
  /** What was being allocated when the GPU refused. */
  readonly allocating: 'weights' | 'kv-cache' | 'activations';
  /** Bytes that allocation asked for. */
  readonly requested: number;
  /** Everything the model needs on the GPU. */
  readonly needs: GpuMemoryNeeds;
  /** The GPU's own message. */
  readonly detail: string;
}> {
  constructor(allocating: GpuOutOfMemoryError['allocating'], requested: number, needs: GpuMemoryNeeds, detail: string) {
    const total = needs.weights + needs.kv + needs.activations;
    const advice = [
      "load a smaller model or quantize its weights (quantize: 'q4_0')",
      `lower kvBudgetBytes (the KV-cache takes ${formatBytes(needs.kv)})`,
      'close other tabs and apps that use the GPU',
    ];
    if (allocating === 'kv-cache') advice.unshift(advice.splice(1, 1)[0]);
    super(
      { allocating, requested, needs: { ...needs }, detail },
      `Out of GPU memory allocating the ${allocating === 'kv-cache' ? 'KV-cache' : allocating} (${formatBytes(requested)}): the model needs ` +
        `${formatBytes(total)} on the GPU (weights ${formatBytes(needs.weights)}, KV-cache ${formatBytes(needs.kv)}, activations ` +
        `${formatBytes(needs.activations)}). Everything this load allocated was freed: ${advice.join(', or ')}, then load again. ` +
        `(GPU: ${detail.split('\n')[0]})`,
    );
  }
}

/** Every error class of this package, by name: what crosses the worker as itself (@intab/engine's error registry). */
export const GPU_ERRORS = { IntabGpuError, WebGpuUnavailableError, DeviceLostError, ShapeError, UnsupportedError, LimitError, GpuValidationError, GpuOutOfMemoryError } as const;
