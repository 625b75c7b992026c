// The pull side of the engine's output. Each request is a Stream: its Sequence queues what each step produced, and
// next() hands all of it over as one chunk (coalesced), or waits for the step that produces something. A failed
// request's last chunk carries finishReason 'error' and the error, after its text. A stream leaves the table once its
// last chunk is delivered (or cancel() drops it); a sequence that sat out of steps because its queue was full rejoins
// the batch when it is pulled.

import type { Chunk } from './contract.ts';
import { IntabEngineError, UnknownStreamError } from './errors.ts';
import type { Pin } from './prefix-cache.ts';
import type { Sequence } from './sequence.ts';
import type { SequenceSpeculation } from './speculator.ts';

interface Waiter {
  resolve(c: Chunk): void;
  reject(e: unknown): void;
}

/** A request the engine runs: its sequence, the pulls waiting on it, and how its end is signalled. */
export interface Stream {
  seq: Sequence;
  /** When the request speculates. */
  spec?: SequenceSpeculation;
  waiters: Waiter[];
  /** Resolved once the sequence's pages are freed (finish, abort, failure). */
  released: Promise<void>;
  release(): void;
  detach?: () => void;
  /** A preload's pin, once its prefix is in the cache. */
  pin?: Pin;
}

/**
 * The engine's live streams, by request id, and their delivery.
 * @example
 * const streams = new Streams(() => performance.now(), () => loop.wake());
 * const stream = streams.open(seq);
 * const chunk = await streams.next(seq.id); // resolves once a step queued output (notify)
 */
export class Streams {
  private readonly byId = new Map<number, Stream>();

  /** `resume`: called when a paused sequence was pulled (it rejoins the batch). */
  constructor(
    private readonly now: () => number,
    private readonly resume: () => void,
  ) {}

  /** Registers the stream of a new request. */
  open(seq: Sequence): Stream {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const stream: Stream = { seq, waiters: [], released, release };
    this.byId.set(seq.id, stream);
    return stream;
  }

  get(id: number): Stream | undefined {
    return this.byId.get(id);
  }

  get size(): number {
    return this.byId.size;
  }

  /** The live streams (a snapshot: the table may change while it is walked). */
  all(): Stream[] {
    return [...this.byId.values()];
  }

  /** Forgets a cancelled stream: pulls still waiting on it reject with UnknownStreamError. */
  drop(stream: Stream): void {
    const id = stream.seq.id;
    this.byId.delete(id);
    for (const w of stream.waiters.splice(0)) w.reject(new UnknownStreamError(id));
  }

  /** Everything the stream produced since the last pull (waits when nothing is ready). */
  async next(id: number): Promise<Chunk> {
    const stream = this.byId.get(id);
    if (!stream) throw new UnknownStreamError(id);
    if (stream.seq.ready && stream.waiters.length === 0) return this.deliver(stream);
    return new Promise<Chunk>((resolve, reject) => {
      stream.waiters.push({ resolve, reject });
      this.notify(stream);
    });
  }

  /** Hands ready output to a waiting next(). */
  notify(stream: Stream): void {
    if (stream.waiters.length === 0 || !stream.seq.ready) return;
    const w = stream.waiters.shift()!;
    try {
      w.resolve(this.deliver(stream));
    } catch (err) {
      w.reject(err);
    }
  }

  /** Whether a stream has output ready and no pull waiting for it (its consumer's next pull may be on its way). */
  awaitingPull(): boolean {
    for (const s of this.byId.values()) if (s.waiters.length === 0 && s.seq.ready) return true;
    return false;
  }

  /** The next chunk; a failed request's last one carries finishReason 'error' and the error, after its text. */
  private deliver(stream: Stream): Chunk {
    const seq = stream.seq;
    const wasPaused = seq.paused;
    const chunk = seq.take(this.now());
    if (chunk.finishReason === 'error') chunk.error = asError(seq.error);
    if (chunk.finishReason) this.byId.delete(seq.id);
    else if (wasPaused) this.resume(); // the sequence rejoins the batch
    return chunk;
  }
}

/** A failure as an Error (a thrown string or object would not cross the worker as one). */
function asError(err: unknown): Error {
  if (err instanceof Error) return err;
  if (err === undefined) return new IntabEngineError('The request failed without saying why: retry it, and report this if it happens again.');
  return new IntabEngineError(`The request failed: ${typeof err === 'string' ? err : JSON.stringify(err) ?? String(err)}`);
}
