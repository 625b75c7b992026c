// Rebuilds a JSON value from partial-JSON events (the inverse of PartialJsonParser), without using snapshots.

import type { JsonEvent, JsonPath } from './events.ts';
import { formatJsonPath, setMember } from './parser.ts';

/**
 * Replays events into a value: `open` creates the container at `path`, string `value` events append their `delta`,
 * other `value` events set `value`; `key`, `type` and `close` change nothing. After the root's `complete` event
 * `value` equals `JSON.parse` of the text. `value` is live and mutable (it is the assembler's own document).
 */
export class JsonAssembler {
  #root: unknown = undefined;
  #complete = false;
  /** The path of the string being assembled from deltas (null between strings). */
  #stringPath: JsonPath | null = null;

  /** The value so far (undefined before the first value starts). */
  get value(): unknown {
    return this.#root;
  }

  /** True once the root value is complete. */
  get complete(): boolean {
    return this.#complete;
  }

  apply(event: JsonEvent): this {
    switch (event.kind) {
      case 'open':
        this.#set(event.path, event.type === 'object' ? {} : []);
        break;
      case 'value': {
        let v = event.value;
        if (event.type === 'string' && event.delta !== undefined) {
          const sp = this.#stringPath;
          const continues = sp !== null && sp.length === event.path.length && sp.every((s, i) => s === event.path[i]);
          v = (continues ? (this.#get(event.path) as string) : '') + event.delta;
          this.#stringPath = event.complete ? null : event.path;
        }
        this.#set(event.path, v);
        break;
      }
      default: // key, type, close
        break;
    }
    if (event.complete && event.path.length === 0) this.#complete = true;
    return this;
  }

  applyAll(events: Iterable<JsonEvent>): this {
    for (const e of events) this.apply(e);
    return this;
  }

  #container(path: JsonPath, depth: number): Record<string | number, unknown> {
    let node: unknown = this.#root;
    for (let d = 0; d < depth; d++) node = (node as Record<string | number, unknown> | undefined)?.[path[d]];
    if (typeof node !== 'object' || node === null) {
      throw new Error(`JsonAssembler: no open container at ${formatJsonPath(path.slice(0, depth))} for an event at ${formatJsonPath(path)}`);
    }
    return node as Record<string | number, unknown>;
  }

  #get(path: JsonPath): unknown {
    return path.length === 0 ? this.#root : this.#container(path, path.length - 1)[path[path.length - 1]];
  }

  #set(path: JsonPath, v: unknown): void {
    if (path.length === 0) {
      this.#root = v;
      return;
    }
    const parent = this.#container(path, path.length - 1);
    const last = path[path.length - 1];
    if (typeof last === 'string') setMember(parent as Record<string, unknown>, last, v);
    else parent[last] = v;
  }
}

/** Applies one event to an assembler (functional spelling of `assembler.apply(event)`). */
export function applyEvent(assembler: JsonAssembler, event: JsonEvent): JsonAssembler {
  return assembler.apply(event);
}

/** Replays a whole event sequence; returns the assembled value. */
export function assembleJson(events: Iterable<JsonEvent>): unknown {
  return new JsonAssembler().applyAll(events).value;
}
