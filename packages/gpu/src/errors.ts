// Typed errors of the GPU runtime. Each sets `name`, carries the fields a caller needs to react,
// and says in its message what to do. They are plain data so they survive structured cloning.

/** Base class: every error thrown by @intab/gpu is an IntabGpuError. */
export class IntabGpuError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IntabGpuError';
  }
}

/** `navigator.gpu` is missing or no adapter could be obtained. */
export class WebGpuUnavailableError extends IntabGpuError {
  readonly reason: 'no-navigator-gpu' | 'no-adapter' | 'request-device-failed';
  constructor(reason: WebGpuUnavailableError['reason'], detail = '', options?: { cause?: unknown }) {
    const what = {
      'no-navigator-gpu': 'this browser does not expose WebGPU (navigator.gpu is undefined)',
      'no-adapter': 'the browser exposes WebGPU but returned no GPU adapter',
      'request-device-failed': 'the GPU adapter refused to create a device',
    }[reason];
    super(
      `WebGPU is unavailable: ${what}${detail ? ` (${detail})` : ''}. ` +
        'Use a recent Chrome/Edge (113+) or Safari 26+, serve the page over https or localhost, ' +
        'and check chrome://gpu; headless Chromium needs --enable-unsafe-webgpu.',
      options,
    );
    this.name = 'WebGpuUnavailableError';
    this.reason = reason;
  }
}

/** The GPU device was lost (driver reset, tab backgrounded too long, destroy()). */
export class DeviceLostError extends IntabGpuError {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(
      `The GPU device was lost (${reason}: ${message || 'no message'}). ` +
        'All GPU buffers are gone: create a new runtime with requestGpu() and reload the model.',
    );
    this.name = 'DeviceLostError';
    this.reason = reason;
  }
}

/** A tensor argument has the wrong shape, size or alignment. */
export class ShapeError extends IntabGpuError {
  readonly kernel: string;
  readonly argument: string;
  readonly expected: string;
  readonly actual: string;
  constructor(kernel: string, argument: string, expected: string, actual: string) {
    super(`${kernel}: argument '${argument}' should be ${expected} but is ${actual}. Fix the caller's shapes.`);
    this.name = 'ShapeError';
    this.kernel = kernel;
    this.argument = argument;
    this.expected = expected;
    this.actual = actual;
  }
}

/** A weight dtype or kernel variant this runtime does not implement, or a feature the device lacks. */
export class UnsupportedError extends IntabGpuError {
  readonly what: string;
  constructor(what: string, advice: string) {
    super(`${what} is not supported: ${advice}`);
    this.name = 'UnsupportedError';
    this.what = what;
  }
}

/** An allocation or binding over the device's limits. */
export class LimitError extends IntabGpuError {
  readonly limit: string;
  readonly requested: number;
  readonly allowed: number;
  /** `unit` 'count' for limits that count things (storage buffers per shader stage), not bytes. */
  constructor(what: string, limit: string, requested: number, allowed: number, advice: string, unit: 'bytes' | 'count' = 'bytes') {
    const f = unit === 'bytes' ? formatBytes : String;
    super(`${what} needs ${f(requested)} but this adapter's ${limit} is ${f(allowed)}: ${advice}`);
    this.name = 'LimitError';
    this.limit = limit;
    this.requested = requested;
    this.allowed = allowed;
  }
}

/** A GPU validation or out-of-memory error captured by an error scope. */
export class GpuValidationError extends IntabGpuError {
  readonly kind: 'validation' | 'out-of-memory' | 'internal';
  constructor(kind: GpuValidationError['kind'], label: string, message: string) {
    super(
      `GPU ${kind} error in ${label}: ${message}` +
        (kind === 'out-of-memory'
          ? ' — free memory (smaller context or quantization) and retry.'
          : ' — this is a bug in intab: please report it with this message.'),
    );
    this.name = 'GpuValidationError';
    this.kind = kind;
  }
}

export function formatBytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  if (n >= 2 ** 10) return `${(n / 2 ** 10).toFixed(1)} KiB`;
  return `${n} B`;
}

/** Every error class of this package, by name: what crosses the worker as itself (@intab/engine's error registry). */
export const GPU_ERRORS = { IntabGpuError, WebGpuUnavailableError, DeviceLostError, ShapeError, UnsupportedError, LimitError, GpuValidationError } as const;
