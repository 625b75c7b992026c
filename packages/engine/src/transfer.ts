// Comlink transfer handlers shared by both sides of the worker boundary. Structured cloning cannot carry an
// AbortSignal or keep an error's class, so: a signal crosses as its state plus a MessagePort that the worker
// turns back into an AbortController's signal (aborted with the same reason), and a thrown error crosses as
// serializeError's plain data that the other side rebuilds with deserializeError (same class, name,
// message, fields, cause; an IntabError keeps its `code`, and stays an IntabError even where its class is not
// registered). Both the main thread and the worker call registerTransferHandlers() once.

import * as Comlink from 'comlink';
import { deserializeError, isSerializedError, serializeError, type SerializedError } from './errors.ts';

// ---- AbortSignal → MessagePort → AbortController ----

type SignalMessage = { type: 'abort'; reason: SerializedReason } | { type: 'release' };
type SerializedReason = { error: SerializedError } | { value: unknown };

/** The port each sent signal is bound to, so release() can close it when its stream is over. */
const sent = new WeakMap<AbortSignal, { port: MessagePort; onAbort: () => void }[]>();

function packReason(reason: unknown): SerializedReason {
  if (reason instanceof Error || (typeof DOMException !== 'undefined' && reason instanceof DOMException)) return { error: serializeError(reason) };
  try {
    structuredClone(reason);
    return { value: reason };
  } catch {
    return { value: String(reason) };
  }
}

function unpackReason(r: SerializedReason): unknown {
  return 'error' in r ? deserializeError(r.error) : r.value;
}

/** What crosses for a signal: its state now, and a port for a later abort (absent when already aborted). */
interface WireSignal {
  aborted: SerializedReason | null;
  port: MessagePort | null;
}

const abortSignalHandler: Comlink.TransferHandler<AbortSignal, WireSignal> = {
  canHandle: (v): v is AbortSignal => typeof AbortSignal !== 'undefined' && v instanceof AbortSignal,
  serialize(signal) {
    // An aborted signal arrives aborted, so the receiver's synchronous `signal.aborted` check sees it.
    if (signal.aborted) return [{ aborted: packReason(signal.reason), port: null }, []];
    const { port1, port2 } = new MessageChannel();
    const onAbort = () => {
      port1.postMessage({ type: 'abort', reason: packReason(signal.reason) } satisfies SignalMessage);
      port1.close();
      sent.delete(signal);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const list = sent.get(signal) ?? [];
    list.push({ port: port1, onAbort });
    sent.set(signal, list);
    return [{ aborted: null, port: port2 }, [port2]];
  },
  deserialize({ aborted, port }) {
    if (aborted) return AbortSignal.abort(unpackReason(aborted));
    const controller = new AbortController();
    if (port) {
      port.onmessage = (ev: MessageEvent<SignalMessage>) => {
        if (ev.data.type === 'abort') controller.abort(unpackReason(ev.data.reason));
        port.onmessage = null;
        port.close();
      };
      port.start();
    }
    return controller.signal;
  },
};

/**
 * Stops forwarding `signal` to the other side and closes its ports: call it when the request the signal
 * was sent with is over, so a long-lived signal does not keep a port per finished request open. The other
 * side's signal then simply never aborts. A signal that was never sent is ignored.
 * @example
 * const id = await remote.start(request, controller.signal);
 * // ... stream over:
 * releaseSignal(controller.signal);
 */
export function releaseSignal(signal: AbortSignal): void {
  const list = sent.get(signal);
  if (!list) return;
  sent.delete(signal);
  for (const { port, onAbort } of list) {
    signal.removeEventListener('abort', onAbort);
    port.postMessage({ type: 'release' } satisfies SignalMessage);
    port.close();
  }
}

// ---- thrown errors keep their class ----

/** Comlink's own 'throw' handler, whose canHandle recognises its internal "thrown" wrapper. */
const comlinkThrow = Comlink.transferHandlers.get('throw')!;

const throwHandler: Comlink.TransferHandler<{ value: unknown }, SerializedError> = {
  canHandle: (v): v is { value: unknown } => comlinkThrow.canHandle(v),
  serialize({ value }) {
    return [serializeError(value), []];
  },
  deserialize(data) {
    throw isSerializedError(data) ? deserializeError(data) : data;
  },
};

// ---- returned values that carry an error (a failed stream's last chunk, a status) keep its class ----

/** A returned plain object with an Error under `error`: Chunk (finishReason 'error') and EngineStatus. */
type WithError = { error: Error } & Record<string, unknown>;

const withErrorHandler: Comlink.TransferHandler<WithError, { value: Record<string, unknown>; error: SerializedError }> = {
  canHandle: (v): v is WithError => typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype && (v as { error?: unknown }).error instanceof Error,
  serialize({ error, ...value }) {
    return [{ value, error: serializeError(error) }, []];
  },
  deserialize({ value, error }) {
    return { ...value, error: deserializeError(error) };
  },
};

let registered = false;

/**
 * Installs intab's transfer handlers into Comlink (idempotent). Call it on both sides before any call
 * crosses: the worker entry and createEngine() do.
 * @example
 * registerTransferHandlers();
 * const remote = Comlink.wrap<EngineApi>(worker);
 * await remote.start(request, controller.signal); // the signal works in the worker
 */
export function registerTransferHandlers(): void {
  if (registered) return;
  registered = true;
  // Replaces Comlink's handler under the same name, so its place (and wire name) stays the same.
  Comlink.transferHandlers.set('throw', throwHandler as Comlink.TransferHandler<unknown, unknown>);
  Comlink.transferHandlers.set('intab:abort-signal', abortSignalHandler as Comlink.TransferHandler<unknown, unknown>);
  Comlink.transferHandlers.set('intab:with-error', withErrorHandler as Comlink.TransferHandler<unknown, unknown>);
}
