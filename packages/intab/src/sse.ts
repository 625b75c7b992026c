// Streams for the web platform: an async iterable as a pull-based ReadableStream, Server-Sent Events
// encoding (`data: {...}\n\n` … `data: [DONE]\n\n`, what OpenAI-compatible servers send) and a decoder
// that follows the WHATWG event-stream rules (any chunk boundary, CR/LF/CRLF, comments, multi-line data),
// so a chat stream can be relayed from a Service Worker or server and read back on the other side.

import { SseFormatError } from './errors.ts';

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
        await it?.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}

const encoder = new TextEncoder();

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
          controller.enqueue(encoder.encode('data: [DONE]\n\n'));
          controller.close();
          return;
        }
        // JSON.stringify escapes line breaks inside strings, so one item is always one data line.
        const json = JSON.stringify(r.value);
        if (json === undefined) throw new TypeError(`encodeSSE: ${typeof r.value} is not JSON-serializable: yield plain objects.`);
        controller.enqueue(encoder.encode(`data: ${json}\n\n`));
      },
      async cancel() {
        await it?.return?.();
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
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  let data: string[] = [];
  let sawData = false;
  let lastWasCR = false;
  let done = false;

  /** Handles one complete line; returns the parsed event when it ends one. */
  const line = (text: string): { value: unknown; done: boolean } | undefined => {
    if (text === '') {
      if (!sawData) return undefined;
      const payload = data.join('\n');
      data = [];
      sawData = false;
      if (payload === '[DONE]') return { value: undefined, done: true };
      try {
        return { value: JSON.parse(payload), done: false };
      } catch (e) {
        throw new SseFormatError(payload, (e as Error).message);
      }
    }
    if (text.startsWith(':')) return undefined; // comment
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      data.push(value);
      sawData = true;
    }
    // event, id, retry and unknown fields carry nothing this decoder returns.
    return undefined;
  };

  try {
    while (!done) {
      const r = await it.next();
      let text = r.done ? decoder.decode() : typeof r.value === 'string' ? r.value : decoder.decode(r.value, { stream: true });
      // A CR that ended the previous chunk already ended its line: drop the LF that may follow it.
      if (lastWasCR && text.startsWith('\n')) text = text.slice(1);
      if (text.length) lastWasCR = text.endsWith('\r');
      buffer += text;
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer.charCodeAt(i);
        if (c !== 10 && c !== 13) continue;
        const ev = line(buffer.slice(start, i));
        if (c === 13 && buffer.charCodeAt(i + 1) === 10) i++;
        start = i + 1;
        if (ev) {
          if (ev.done) {
            done = true;
            break;
          }
          yield ev.value as T;
        }
      }
      buffer = buffer.slice(start);
      // An event not closed by a blank line when the stream ends is discarded, as the standard says.
      if (r.done) break;
    }
  } finally {
    await it.return?.();
  }
}
