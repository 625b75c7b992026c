// The TransformStreams, composed with pipeThrough as an app would: text of chunks; SSE out and back in (split at
// every byte, [DONE] ending the stream, bad data an SseFormatError); partial-JSON events of a document split anywhere
// (and a truncated one erroring); stop strings matched across chunks, never emitted, cancelling the source; the
// smoother's steady pace, its catch-up bound and its drain, on fake timers.

import { afterEach, describe, expect, test, vi } from 'vitest';
import { SseFormatError } from './errors.ts';
import { jsonEventStream, smoother, sseDecoder, sseEncoder, stopFilter, textOnly } from './transforms.ts';
import { InvalidArgumentError } from './errors.ts';

/** A stream of these items. */
function from<T>(items: T[]): ReadableStream<T> {
  return new ReadableStream({
    start(c) {
      for (const x of items) c.enqueue(x);
      c.close();
    },
  });
}

async function all<T>(stream: ReadableStream<T>): Promise<T[]> {
  const out: T[] = [];
  for (const reader = stream.getReader(); ; ) {
    const r = await reader.read();
    if (r.done) return out;
    out.push(r.value);
  }
}

describe('textOnly', () => {
  test('the text of each chunk, empty ones dropped', async () => {
    expect(await all(from([{ text: 'Hel' }, { text: '' }, { text: 'lo', ids: [3] }, { text: null }]).pipeThrough(textOnly()))).toEqual(['Hel', 'lo']);
  });
});

describe('sseEncoder → sseDecoder', () => {
  const values = [{ a: 1 }, { text: 'line\nbreak', emoji: 'héllo 🦙' }, [1, 2, 3], 'plain', null];

  test('the values come back, with the bytes split at every position', async () => {
    const bytes = new Uint8Array((await all(from(values).pipeThrough(sseEncoder()))).flatMap((b) => [...b]));
    const text = new TextDecoder().decode(bytes);
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(text.split('\n\n').filter(Boolean)).toHaveLength(values.length + 1);
    for (let cut = 1; cut < bytes.length; cut += 7) {
      const pieces = [bytes.slice(0, cut), bytes.slice(cut)];
      expect(await all(from(pieces).pipeThrough(sseDecoder())), `cut at ${cut}`).toEqual(values);
    }
  });

  test('[DONE] ends the output; CRLF, comments and multi-line data as the standard says; bad data errors the stream', async () => {
    const text = ': keep-alive\r\ndata: {"x":\r\ndata: 1}\r\n\r\ndata: [DONE]\n\ndata: {"after":true}\n\n';
    expect(await all(from([text]).pipeThrough(sseDecoder()))).toEqual([{ x: 1 }]);
    const err = await all(from(['data: {not json}\n\n']).pipeThrough(sseDecoder())).catch((e) => e);
    expect(err).toBeInstanceOf(SseFormatError);
  });
});

describe('jsonEventStream', () => {
  const doc = '{"name": "Ada", "tags": ["x", "y"], "n": 42}';

  test('the same events wherever the text is split; the values assemble the document', async () => {
    const whole = await all(from([doc]).pipeThrough(jsonEventStream()));
    const byChar = await all(from([...doc]).pipeThrough(jsonEventStream()));
    // Finished values (the last event of each path) and keys do not depend on the split; the root's close is the document.
    const finished = (evs: { kind: string; path: readonly unknown[]; value?: unknown; complete?: boolean }[]) =>
      evs.filter((e) => e.kind === 'key' || e.complete).map((e) => [e.kind, e.path.join('.'), JSON.stringify(e.value)]);
    expect(finished(byChar)).toEqual(finished(whole));
    expect(whole.at(-1)).toMatchObject({ kind: 'close', path: [], complete: true, value: JSON.parse(doc) });
    // The split text streams the string as it grows: more events, whose deltas concatenate to it.
    expect(byChar.length).toBeGreaterThan(whole.length);
    expect(byChar.filter((e) => e.path.join('.') === 'name' && e.kind === 'value').map((e) => e.delta).join('')).toBe('Ada');
  });

  test('a truncated document errors the stream', async () => {
    const err = await all(from(['{"name": "Ad']).pipeThrough(jsonEventStream())).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('PartialJsonError');
  });
});

describe('stopFilter', () => {
  test('a stop string split across chunks is matched and never emitted; the text before it all comes out', async () => {
    const out = await all(from(['Once upon', ' a time. TH', 'E E', 'ND and more']).pipeThrough(stopFilter(['THE END'])));
    expect(out.join('')).toBe('Once upon a time. ');
  });

  test('text that only looked like a stop string is released; the earliest of several stops wins', async () => {
    expect((await all(from(['a TH', 'E ', 'BEGINNING']).pipeThrough(stopFilter(['THE END'])))).join('')).toBe('a THE BEGINNING');
    expect((await all(from(['x <|end|> y STOP']).pipeThrough(stopFilter(['STOP', '<|end|>'])))).join('')).toBe('x ');
  });

  test('a match cancels the source (a generation stops) and ends the output', async () => {
    let pulled = 0;
    let cancelled = false;
    const source = new ReadableStream<string>({
      pull(c) {
        c.enqueue(pulled++ === 2 ? 'STOP' : 'go ');
      },
      cancel() {
        cancelled = true;
      },
    });
    expect((await all(source.pipeThrough(stopFilter(['STOP'])))).join('')).toBe('go go ');
    await vi.waitFor(() => expect(cancelled).toBe(true));
    expect(() => stopFilter(['ok', ''])).toThrow(InvalidArgumentError);
  });
});

describe('smoother', () => {
  afterEach(() => vi.useRealTimers());

  test('releases at the steady pace, catches up within maxLagMs, and drains at the end', async () => {
    vi.useFakeTimers();
    const pace = smoother({ charsPerSecond: 125, maxLagMs: 400, tickMs: 16 }); // 2 characters a tick
    const writer = pace.writable.getWriter();
    const got: { at: number; text: string }[] = [];
    const reading = (async () => {
      for (const reader = pace.readable.getReader(); ; ) {
        const r = await reader.read();
        if (r.done) return;
        got.push({ at: Date.now(), text: r.value });
      }
    })();
    const t0 = Date.now();
    const first = writer.write('abcdefghij'); // 10 characters: 2 a tick, within the lag bound
    await vi.advanceTimersByTimeAsync(100);
    await first;
    expect(got.map((g) => g.text)).toEqual(['ab', 'cd', 'ef', 'gh', 'ij']);
    expect(got.at(-1)!.at - t0).toBeGreaterThanOrEqual(64);
    // A burst of 1,000 characters: the pace rises so that none waits much past maxLagMs.
    got.length = 0;
    const t1 = Date.now();
    const burst = writer.write('x'.repeat(1000));
    const closing = writer.close();
    await vi.advanceTimersByTimeAsync(1000);
    await burst;
    await closing;
    await reading;
    expect(got.map((g) => g.text).join('')).toBe('x'.repeat(1000));
    expect(got.at(-1)!.at - t1).toBeLessThanOrEqual(400 + 2 * 16);
    expect(got.length).toBeGreaterThan(10); // released over many ticks, not at once
  });

  test('never splits a surrogate pair, and rejects nonsense options', async () => {
    vi.useFakeTimers();
    const pace = smoother({ charsPerSecond: 62.5, tickMs: 16 }); // 1 code unit a tick
    const reading = all(pace.readable);
    const writer = pace.writable.getWriter();
    const write = writer.write('🦙🦙a');
    const closing = writer.close();
    await vi.advanceTimersByTimeAsync(1000);
    await write;
    await closing;
    expect(await reading).toEqual(['🦙', '🦙', 'a']);
    expect(() => smoother({ charsPerSecond: 0 })).toThrow(InvalidArgumentError);
  });
});
