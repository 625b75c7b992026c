// Web TransformStreams for what streams out of an engine (local or remote), composable with pipeThrough:
//   textOnly        chunks → their text
//   sseEncoder      JSON values → Server-Sent Events bytes, `data: [DONE]` at the end (what encodeSSE writes)
//   sseDecoder      SSE bytes or text, split anywhere → the JSON value of each event, ending at [DONE]
//   jsonEventStream text → partial-JSON events (a JSON document as it streams; a truncated one errors the stream)
//   stopFilter      text → text up to the first stop string, which is never emitted; the stream then ends, which
//                   cancels what feeds it (a generation stops)
//   smoother        text → the same text at a steady pace for display, never lagging more than maxLagMs
// Each keeps backpressure: a transform that holds text back does so only as long as it must.

import { PartialJsonParser, type JsonEvent, type PartialJsonOptions } from '@intab/grammar/partial';
import { SSE_DONE, SseParser, sseEvent } from './sse.ts';
import { InvalidArgumentError } from './errors.ts';

/**
 * The text of each chunk (empty ones dropped).
 * @example
 * const text = toReadableStream(engine.generate(request)).pipeThrough(textOnly());
 */
export function textOnly(): TransformStream<{ text?: string | null }, string> {
  return new TransformStream({
    transform(chunk, controller) {
      if (chunk.text) controller.enqueue(chunk.text);
    },
  });
}

/**
 * Server-Sent Events bytes: `data: <json>\n\n` per value, then `data: [DONE]\n\n` when the input ends.
 * @example
 * return new Response(toReadableStream(chunks).pipeThrough(sseEncoder()), { headers: { 'Content-Type': 'text/event-stream' } });
 */
export function sseEncoder(): TransformStream<unknown, Uint8Array> {
  const encoder = new TextEncoder();
  return new TransformStream({
    transform(value, controller) {
      controller.enqueue(encoder.encode(sseEvent(value, 'sseEncoder')));
    },
    flush(controller) {
      controller.enqueue(encoder.encode(SSE_DONE));
    },
  });
}

/**
 * The JSON value of each event of a Server-Sent Events stream (bytes or text, split anywhere); `data: [DONE]` ends the
 * output (what follows is ignored). Data that is not JSON errors the stream with an SseFormatError.
 * @example
 * const res = await fetch(url, { method: 'POST', body });
 * for await (const chunk of res.body!.pipeThrough(sseDecoder())) console.log(chunk);
 */
export function sseDecoder<T = unknown>(): TransformStream<Uint8Array | string, T> {
  const parser = new SseParser();
  return new TransformStream({
    transform(piece, controller) {
      for (const value of parser.push(piece)) controller.enqueue(value as T);
      if (parser.done) controller.terminate();
    },
    flush(controller) {
      for (const value of parser.end()) controller.enqueue(value as T);
    },
  });
}

/**
 * Partial-JSON events of a text stream that holds one JSON document (keys, values as they complete, string deltas);
 * the end of the input ends the document, and a truncated or malformed one errors the stream (PartialJsonError).
 * @example
 * for await (const ev of textStream.pipeThrough(jsonEventStream())) if (ev.kind === 'value') console.log(ev.path, ev.value);
 */
export function jsonEventStream(options?: PartialJsonOptions): TransformStream<string, JsonEvent> {
  const parser = new PartialJsonParser(options);
  return new TransformStream({
    transform(text, controller) {
      for (const ev of parser.push(text)) controller.enqueue(ev);
    },
    flush(controller) {
      for (const ev of parser.end()) controller.enqueue(ev);
    },
  });
}

/**
 * Text up to the first occurrence of any stop string, which is never emitted, matched across chunk boundaries: text
 * that could still begin a stop string is held back until it cannot. A match ends the output and cancels the input.
 * @example
 * const story = textStream.pipeThrough(stopFilter(['THE END']));
 */
export function stopFilter(stops: readonly string[]): TransformStream<string, string> {
  const list = stops.filter((s) => s.length > 0);
  if (list.length !== stops.length) throw new InvalidArgumentError('stopFilter', 'stopFilter: a stop string is empty: give non-empty strings.');
  let held = '';
  return new TransformStream({
    transform(text, controller) {
      held += text;
      let at = -1;
      for (const s of list) {
        const i = held.indexOf(s);
        if (i >= 0 && (at < 0 || i < at)) at = i;
      }
      if (at >= 0) {
        if (at > 0) controller.enqueue(held.slice(0, at));
        held = '';
        controller.terminate();
        return;
      }
      // Keep the longest tail that is a proper prefix of some stop string.
      let keep = 0;
      for (const s of list) for (let k = Math.min(s.length - 1, held.length); k > keep; k--) if (held.endsWith(s.slice(0, k))) keep = k;
      if (held.length > keep) controller.enqueue(held.slice(0, held.length - keep));
      held = held.slice(held.length - keep);
    },
    flush(controller) {
      if (held) controller.enqueue(held);
    },
  });
}

export interface SmootherOptions {
  /** The steady pace [60 characters per second]. */
  charsPerSecond?: number;
  /** Text is never held longer than this: the pace rises to clear a backlog within it [500 ms]. */
  maxLagMs?: number;
  /** Time between two releases [16 ms, a frame]. */
  tickMs?: number;
}

/**
 * The same text, released at a steady pace for display (bursty token streams read unevenly), speeding up whenever
 * the backlog would otherwise wait longer than maxLagMs; the end of the input releases the rest within maxLagMs.
 * @example
 * textStream.pipeThrough(smoother({ charsPerSecond: 80 })).pipeTo(new WritableStream({ write: (t) => (out.textContent += t) }));
 */
export function smoother(o: SmootherOptions = {}): TransformStream<string, string> {
  const pace = o.charsPerSecond ?? 60;
  const maxLag = o.maxLagMs ?? 500;
  const tick = o.tickMs ?? 16;
  if (!(pace > 0) || !(maxLag > 0) || !(tick > 0)) throw new InvalidArgumentError('smoother', 'smoother: charsPerSecond, maxLagMs and tickMs must be positive numbers.');
  /** Text not yet released, in arrival order, each piece with its deadline (arrival + maxLag). */
  const pieces: { text: string; due: number }[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let drained: (() => void) | undefined;
  let out: TransformStreamDefaultController<string>;
  const backlog = () => pieces.reduce((n, p) => n + p.text.length, 0);
  const release = () => {
    timer = undefined;
    const now = Date.now();
    const left = backlog();
    // The steady share of a tick; more when the last piece would otherwise pass its deadline (spread evenly over the
    // ticks left to it); and at least every character whose deadline falls before the next tick.
    const last = pieces[pieces.length - 1];
    let n = Math.max(1, Math.round((pace * tick) / 1000), Math.ceil(left / Math.max(1, Math.floor((last.due - now) / tick))));
    let overdue = 0;
    for (const p of pieces) {
      if (p.due > now + tick) break;
      overdue += p.text.length;
    }
    n = Math.min(left, Math.max(n, overdue));
    let text = '';
    while (text.length < n) {
      const p = pieces[0];
      const take = Math.min(p.text.length, n - text.length);
      text += p.text.slice(0, take);
      if (take === p.text.length) pieces.shift();
      else p.text = p.text.slice(take);
    }
    // Never split a surrogate pair.
    const code = text.charCodeAt(text.length - 1);
    if (code >= 0xd800 && code <= 0xdbff && pieces.length) {
      text += pieces[0].text[0];
      pieces[0].text = pieces[0].text.slice(1);
      if (!pieces[0].text) pieces.shift();
    }
    try {
      out.enqueue(text);
    } catch {
      pieces.length = 0; // the reader cancelled: nothing left to show
      return;
    }
    if (pieces.length) timer = setTimeout(release, tick);
    else drained?.();
  };
  return new TransformStream({
    start(controller) {
      out = controller;
    },
    transform(text) {
      if (!text) return;
      pieces.push({ text, due: Date.now() + maxLag });
      timer ??= setTimeout(release, 0);
    },
    flush() {
      if (!pieces.length) return;
      return new Promise<void>((resolve) => (drained = resolve));
    },
  });
}
