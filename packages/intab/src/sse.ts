// Streams for the web platform: an async iterable as a pull-based ReadableStream, Server-Sent Events
// encoding (`data: {...}\n\n` … `data: [DONE]\n\n`, what OpenAI-compatible servers send: the one SSE writer) and a
// decoder that follows the WHATWG event-stream rules (eventsource-parser: any chunk boundary, CR/LF/CRLF, comments,
// multi-line data), so a chat stream can be relayed from a Service Worker or server and read back on the other side.

import { createParser, type EventSourceParser } from 'eventsource-parser';
import { InvalidArgumentError, SseFormatError } from './errors.ts';

/** Anything whose items can be pulled one at a time. */
export type StreamSource<T> = AsyncIterable<T> | ReadableStream<T>;

function iteratorOf<T>(source: StreamSource<T>): AsyncIterator<T> {
  if (Symbol.asyncIterator in source) return (source as AsyncIterable<T>)[Symbol.asyncIterator]();
  const reader = (source as ReadableStream<T>).getReader();
  let released = false;
  return {
    async next() {
      const r = await reader.read();
      if (r.done && !released) {
        released = true;
        reader.releaseLock();
      }
      return r.done ? { done: true, value: undefined } : { done: false, value: r.value };
    },
    async return() {
      if (!released) {
        released = true;
        await reader.cancel();
        reader.releaseLock();
      }
      return { done: true, value: undefined };
    },
  };
}

/**
 * An async iterable as a ReadableStream. Pull-based (high-water mark 0): an item is taken from the
 * iterable only when the stream's reader asks, so backpressure reaches the engine. Cancelling the stream
 * calls the iterator's `return()`, which cancels the generation.
 * @example
 * const stream = toReadableStream(engine.generate({ prompt: 'Once upon a time' }));
 * for (const reader = stream.getReader(); ; ) {
 *   const { done, value } = await reader.read();
 *   if (done) break;
 *   console.log(value.text);
 * }
 */
export function toReadableStream<T>(iterable: AsyncIterable<T>): ReadableStream<T> {
  let it: AsyncIterator<T> | undefined;
  return new ReadableStream<T>(
    {
      async pull(controller) {
        it ??= iterable[Symbol.asyncIterator]();
        const r = await it.next();
        if (r.done) controller.close();
        else controller.enqueue(r.value);
      },
      async cancel() {
        await (it ??= iterable[Symbol.asyncIterator]()).return?.();
      },
    },
    { highWaterMark: 0 },
  );
}

const encoder = new TextEncoder();

/** One item as an event: `data: <json>\n\n` (JSON.stringify escapes line breaks in strings: always one data line). */
export function sseEvent(value: unknown, caller: string): string {
  const json = JSON.stringify(value);
  if (json === undefined) throw new InvalidArgumentError(caller, `${caller}: ${typeof value} is not JSON-serializable: give plain objects.`);
  return `data: ${json}\n\n`;
}

/** The event that ends an OpenAI-style stream. */
export const SSE_DONE = 'data: [DONE]\n\n';

/**
 * Server-Sent Events bytes of a stream of JSON values: one `data: <json>\n\n` event per item, then
 * `data: [DONE]\n\n` — the wire format of OpenAI's streaming API. Pull-based, like toReadableStream.
 * @example
 * // In a Service Worker or server handler:
 * const chunks = await engine.chat.completions.create({ messages, stream: true });
 * return new Response(encodeSSE(chunks), { headers: { 'Content-Type': 'text/event-stream' } });
 */
export function encodeSSE(source: StreamSource<unknown>): ReadableStream<Uint8Array> {
  let it: AsyncIterator<unknown> | undefined;
  let finished = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (finished) return;
        it ??= iteratorOf(source);
        const r = await it.next();
        if (r.done) {
          finished = true;
          controller.enqueue(encoder.encode(SSE_DONE));
          controller.close();
          return;
        }
        controller.enqueue(encoder.encode(sseEvent(r.value, 'encodeSSE')));
      },
      async cancel() {
        // Cancelled before its first read too: the source is told (a stream's return() cancels its generation).
        if (!finished) await (it ??= iteratorOf(source)).return?.();
      },
    },
    { highWaterMark: 0 },
  );
}

/** What decodeSSE accepts: a fetch Response, its body, or any stream of bytes or text. */
export type SseInput = Response | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>;

/**
 * Parses a Server-Sent Events stream into the JSON value of each event's data, ending at `data: [DONE]`
 * (or at the end of the stream). Chunks may split anywhere, even inside a UTF-8 character or between CR
 * and LF; comment lines (`: keep-alive`) are skipped; an event's several `data:` lines are joined with
 * '\n' as the standard says. Data that is not JSON is an SseFormatError.
 * @example
 * const res = await fetch('/v1/chat/completions', { method: 'POST', body: JSON.stringify({ messages, stream: true }) });
 * for await (const chunk of decodeSSE(res)) console.log(chunk.choices[0]?.delta.content ?? '');
 */
export async function* decodeSSE<T = any>(input: SseInput): AsyncGenerator<T, void, undefined> {
  let source: StreamSource<Uint8Array | string>;
  if (typeof Response !== 'undefined' && input instanceof Response) {
    if (!input.body) return;
    source = input.body;
  } else {
    source = input as StreamSource<Uint8Array | string>;
  }
  const it = iteratorOf(source);
  const parser = new SseParser();
  try {
    while (!parser.done) {
      const r = await it.next();
      for (const value of r.done ? parser.end() : parser.push(r.value)) yield value as T;
      if (r.done) break;
    }
  } finally {
    await it.return?.();
  }
}

/**
 * The event-stream parser behind decodeSSE, sseDecoder and the remote backend: text or bytes in, in pieces split
 * anywhere, the JSON value of each complete event's data out, until `data: [DONE]` (`done` then turns true and later
 * input is ignored). The event-stream rules themselves (CR, LF and CRLF line ends, also split between pieces; comments;
 * multi-line data; other fields; a leading byte-order mark) are eventsource-parser's.
 * @example
 * const parser = new SseParser();
 * parser.push('data: {"a":1}\n\nda'); // [{ a: 1 }]
 * parser.push('ta: [DONE]\n\n');      // []; parser.done === true
 */
export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private readonly parser: EventSourceParser;
  /** The values of the events of the piece being fed. */
  private values: unknown[] = [];
  /** An event that was not JSON, after good events of the same piece: thrown by the next call, so those are not lost. */
  private failed?: SseFormatError;
  /** Whether `data: [DONE]` was seen. */
  done = false;

  constructor() {
    this.parser = createParser({ onEvent: (e) => this.event(e.data) });
  }

  /**
   * The values of the events this piece completes. Data that is not JSON throws SseFormatError, after the values of
   * the events before it are returned (the error is then thrown by the next call).
   */
  push(piece: Uint8Array | string): unknown[] {
    return this.take(typeof piece === 'string' ? piece : this.decoder.decode(piece, { stream: true }));
  }

  /** The end of the stream: an event not closed by a blank line is discarded, as the standard says. */
  end(): unknown[] {
    return this.take(this.decoder.decode());
  }

  private take(text: string): unknown[] {
    if (this.failed) throw this.failed;
    if (this.done) return [];
    this.parser.feed(text);
    const out = this.values;
    this.values = [];
    if (this.failed && out.length === 0) throw this.failed;
    return out;
  }

  /** One dispatched event's data (events after [DONE] or after bad data in the same piece are not read). */
  private event(data: string): void {
    if (this.done || this.failed) return;
    if (data === '[DONE]') {
      this.done = true;
      return;
    }
    try {
      this.values.push(JSON.parse(data));
    } catch (e) {
      this.failed = new SseFormatError(data, (e as Error).message);
    }
  }
}
