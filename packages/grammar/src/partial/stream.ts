// Text stream (e.g. a remote backend's deltas) -> partial-JSON events.

import type { JsonEvent, PartialJsonOptions } from './events.ts';
import { PartialJsonParser } from './parser.ts';

/**
 * Turns any text stream into partial-JSON events: each chunk is pushed through a {@link PartialJsonParser} and its
 * events are yielded in order; the stream's end ends the document (a truncated document throws PartialJsonError).
 * Breaking out of the loop returns (closes) the source stream.
 */
export async function* jsonEvents(
  textStream: AsyncIterable<string> | Iterable<string>,
  options?: PartialJsonOptions,
): AsyncGenerator<JsonEvent, void, undefined> {
  const parser = new PartialJsonParser(options);
  for await (const chunk of textStream) yield* parser.push(chunk);
  yield* parser.end();
}
