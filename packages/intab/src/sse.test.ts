// The SSE encoder and decoder: the encoder's exact bytes, a round trip split at every byte boundary (and
// byte by byte), the decoder (eventsource-parser underneath) on the standard's corner cases (CRLF / CR / LF, comments,
// multi-line data, other fields, a split multi-byte character, a trailing unterminated event, bad data after good
// events), and the pull-based streams (nothing is taken from the source before it is read; cancel reaches the
// iterator's return(), even before the first read).
import { describe, expect, test } from 'vitest';
import { SseParser, decodeSSE, encodeSSE, toReadableStream } from './sse.ts';
import { SseFormatError } from './errors.ts';

async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for (const reader = stream.getReader(); ; ) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

async function* from<T>(items: T[]): AsyncGenerator<T> {
  for (const x of items) yield x;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** A byte stream delivering `bytes` cut at the given offsets. */
function split(bytes: Uint8Array, cuts: number[]): ReadableStream<Uint8Array> {
  const bounds = [0, ...cuts, bytes.length];
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (i >= bounds.length - 1) return c.close();
      c.enqueue(bytes.slice(bounds[i], bounds[i + 1]));
      i++;
    },
  });
}

const items = [
  { id: 'chatcmpl-1', choices: [{ index: 0, delta: { role: 'assistant', content: 'Héllo' } }] },
  { text: 'line1\nline2\r\n: not a comment', emoji: '🦙 ünïcödé', n: -1.5e-7 },
  { empty: '' },
  [1, 2, { nested: ['data: [DONE]'] }],
];

describe('encodeSSE', () => {
  test('writes one data line per item and [DONE] at the end', async () => {
    const text = new TextDecoder().decode(await bytesOf(encodeSSE(from([{ a: 1 }, { b: 'x\ny' }]))));
    expect(text).toBe('data: {"a":1}\n\ndata: {"b":"x\\ny"}\n\ndata: [DONE]\n\n');
  });

  test('an empty source is just [DONE]', async () => {
    expect(new TextDecoder().decode(await bytesOf(encodeSSE(from([]))))).toBe('data: [DONE]\n\n');
  });

  test('reads a ReadableStream source too', async () => {
    const text = new TextDecoder().decode(await bytesOf(encodeSSE(toReadableStream(from([7])))));
    expect(text).toBe('data: 7\n\ndata: [DONE]\n\n');
  });
});

describe('decodeSSE round trip', () => {
  test('split at every byte boundary (two pieces)', async () => {
    const bytes = await bytesOf(encodeSSE(from(items)));
    for (let cut = 0; cut <= bytes.length; cut++) {
      expect(await collect(decodeSSE(split(bytes, [cut]))), `cut at ${cut}`).toEqual(items);
    }
  });

  test('one byte per chunk', async () => {
    const bytes = await bytesOf(encodeSSE(from(items)));
    const cuts = Array.from({ length: bytes.length - 1 }, (_, i) => i + 1);
    expect(await collect(decodeSSE(split(bytes, cuts)))).toEqual(items);
  });

  test('every pair of cuts on a short stream', async () => {
    const bytes = await bytesOf(encodeSSE(from([{ ü: '🦙' }, { b: 2 }])));
    for (let a = 0; a <= bytes.length; a++) {
      for (let b = a; b <= bytes.length; b++) {
        expect(await collect(decodeSSE(split(bytes, [a, b]))), `cuts ${a}, ${b}`).toEqual([{ ü: '🦙' }, { b: 2 }]);
      }
    }
  });

  test('from a fetch Response', async () => {
    const res = new Response(encodeSSE(from(items)), { headers: { 'Content-Type': 'text/event-stream' } });
    expect(await collect(decodeSSE(res))).toEqual(items);
  });
});

describe('decodeSSE follows the event-stream rules', () => {
  const decode = (text: string, cuts: number[] = []) => collect(decodeSSE(split(new TextEncoder().encode(text), cuts)));

  test('CRLF, CR and LF line ends, also when CR and LF fall in different chunks', async () => {
    const text = 'data: 1\r\n\r\ndata: 2\r\rdata: 3\n\ndata: [DONE]\r\n\r\n';
    for (let cut = 0; cut <= text.length; cut++) expect(await decode(text, [cut]), `cut ${cut}`).toEqual([1, 2, 3]);
  });

  test('comments, other fields, "data" without a space, and a multi-line data event', async () => {
    const text = ': keep-alive\n\nevent: message\nid: 7\nretry: 1000\ndata:{"a":\ndata: 1}\n\n:\ndata: 2\nunknown: x\n\n';
    expect(await decode(text)).toEqual([{ a: 1 }, 2]);
  });

  test('a blank line with no data dispatches nothing', async () => {
    expect(await decode('\n\n\nid: 3\n\ndata: 5\n\n')).toEqual([5]);
  });

  test('stops at [DONE] and ignores what follows; drops an unterminated last event', async () => {
    expect(await decode('data: 1\n\ndata: [DONE]\n\ndata: 2\n\n')).toEqual([1]);
    expect(await decode('data: 1\n\ndata: 2\n')).toEqual([1]);
  });

  test('a byte-order mark at the start is skipped', async () => {
    expect(await decode('\uFEFFdata: 1\n\n')).toEqual([1]);
  });

  test('string chunks work as well as bytes', async () => {
    expect(await collect(decodeSSE(from(['data: {"x"', ':1}\r', '\n\r\n', 'data: [DONE]\n\n'])))).toEqual([{ x: 1 }]);
  });

  test('data that is not JSON is an SseFormatError with the data', async () => {
    const err = await decode('data: hello\n\n').catch((e) => e);
    expect(err).toBeInstanceOf(SseFormatError);
    expect(err.name).toBe('SseFormatError');
    expect(err.data).toBe('hello');
  });

  test('data that is not JSON after good events of the same piece: those first, then the error', () => {
    const parser = new SseParser();
    expect(parser.push('data: 1\n\n: keep-alive\n\ndata: {oops\n\ndata: 3\n\n')).toEqual([1]);
    expect(() => parser.push('data: 4\n\n')).toThrow(SseFormatError);
    // Bytes split inside a character, an event that ends only at the end, [DONE] then nothing more.
    const p2 = new SseParser();
    const bytes = new TextEncoder().encode('data: "🦙"\r\n\r\ndata: [DONE]\n\ndata: 5\n\n');
    expect([...p2.push(bytes.slice(0, 9)), ...p2.push(bytes.slice(9))]).toEqual(['🦙']);
    expect([p2.done, p2.end()]).toEqual([true, []]);
  });

  test('breaking out early cancels the byte stream', async () => {
    let cancelled = false;
    const enc = new TextEncoder();
    let n = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        c.enqueue(enc.encode(`data: ${n++}\n\n`));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const v of decodeSSE(stream)) if (v === 2) break;
    expect(cancelled).toBe(true);
  });
});

describe('cancelled before the first read', () => {
  /** An iterable whose return() is seen, however far it was read. */
  function watched() {
    const seen = { pulled: 0, returned: false };
    const source: AsyncIterable<number> = {
      [Symbol.asyncIterator]: () => ({
        next: async () => ({ done: false, value: seen.pulled++ }),
        return: async () => ((seen.returned = true), { done: true, value: undefined }),
      }),
    };
    return { source, seen };
  }

  test('encodeSSE and toReadableStream tell the source (its return() cancels a generation)', async () => {
    for (const make of [(s: AsyncIterable<number>) => encodeSSE(s), (s: AsyncIterable<number>) => toReadableStream(s)]) {
      const { source, seen } = watched();
      await make(source).cancel();
      expect(seen).toEqual({ pulled: 0, returned: true });
    }
  });
});

describe('toReadableStream', () => {
  test('is pull-based and cancel calls return()', async () => {
    const pulled: number[] = [];
    let returned = false;
    const source: AsyncIterable<number> = {
      [Symbol.asyncIterator]() {
        let i = 0;
        return {
          async next() {
            pulled.push(i);
            return { done: false, value: i++ };
          },
          async return() {
            returned = true;
            return { done: true, value: undefined };
          },
        };
      },
    };
    const stream = toReadableStream(source);
    await Promise.resolve();
    expect(pulled).toEqual([]); // nothing taken before a read
    const reader = stream.getReader();
    expect((await reader.read()).value).toBe(0);
    expect((await reader.read()).value).toBe(1);
    expect(pulled).toEqual([0, 1]);
    await reader.cancel();
    expect(returned).toBe(true);
  });

  test('ends when the iterable ends', async () => {
    expect(await collect(toReadableStream(from(['a', 'b'])) as unknown as AsyncIterable<string>)).toEqual(['a', 'b']);
  });
});
