import { describe, expect, it } from 'vitest';
import { JsonAssembler, PartialJsonError, PartialJsonParser, assembleJson, jsonEvents, parsePartialJson, type JsonEvent, type SnapshotMode } from './index.ts';
import { mulberry32 } from '@intab/testing/random';
import { deepDoc, generateDoc, preorder, referencePartial, split, typeAt, valueAt, type GeneratedDoc } from './testing.ts';

const key = (p: readonly (string | number)[]) => JSON.stringify(p);

function run(chunks: string[], snapshots: SnapshotMode = 'event'): JsonEvent[] {
  const p = new PartialJsonParser({ snapshots });
  const events: JsonEvent[] = [];
  for (const c of chunks) events.push(...p.push(c));
  events.push(...p.end());
  return events;
}

/** Deep equality with Object.is on primitives (-0 is not 0), own enumerable keys in any order. */
function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

const isParentOf = (p: (string | number)[], c: (string | number)[]) => p.length === c.length - 1 && p.every((s, i) => s === c[i]);

/** Every property the fuzz checks, on the events of one split of one document. Problems are collected and asserted
 *  once (expect() in the inner loops would dominate the run time). */
function check(doc: GeneratedDoc, events: JsonEvent[], snapshots: boolean | ((i: number) => boolean)): void {
  const { text, tree } = doc;
  const expected = JSON.parse(text);
  const bad: string[] = [];
  const fail = (i: number, what: string) => bad.length < 5 && bad.push(`event ${i} ${JSON.stringify(events[i])}: ${what}`);
  // The replayed events give exactly JSON.parse's value (Object.is on numbers: -0 stays -0).
  if (!same(assembleJson(events), expected)) bad.push('assembled value differs from JSON.parse');
  // Paths first appear in document order, every path of the document appears.
  const first: string[] = [];
  const byPath = new Map<string, number[]>();
  events.forEach((e, i) => {
    const k = key(e.path);
    if (!byPath.has(k)) {
      byPath.set(k, []);
      first.push(k);
    }
    byPath.get(k)!.push(i);
    if (i && e.offset < events[i - 1].offset) fail(i, 'offset went back');
  });
  expect(first).toEqual(preorder(tree).map(key));
  const last = events[events.length - 1];
  if (last.path.length || !last.complete) fail(events.length - 1, 'the last event does not complete the root');
  // Well nested: an open container is closed before its parent, and every other event is for a child of the
  // innermost open container (so everything inside a container comes between its open and close).
  const stack: (string | number)[][] = [];
  events.forEach((e, i) => {
    const top = stack[stack.length - 1];
    if (e.kind === 'close') {
      if (!top || key(top) !== key(e.path)) fail(i, 'close of a container that is not the innermost open one');
      stack.pop();
      return;
    }
    if (top ? !isParentOf(top, e.path) : e.path.length !== 0) fail(i, 'not a child of the innermost open container');
    if (e.kind === 'open') stack.push(e.path);
  });
  if (stack.length) bad.push('containers left open');
  for (const [k, idx] of byPath) {
    const path = JSON.parse(k) as (string | number)[];
    const evs = idx.map((i) => events[i]);
    const type = typeAt(tree, path);
    // A member's key is announced (once) before its value.
    let rest = evs;
    if (typeof path[path.length - 1] === 'string') {
      if (evs[0].kind !== 'key' || evs[0].value !== undefined) fail(idx[0], 'a member does not start with its key');
      rest = evs.slice(1);
    }
    if (!rest.every((e) => e.kind !== 'key' && e.type === type)) fail(idx[0], `events of a ${type} with another kind or type`);
    // Exactly one complete event, the last, with the final value.
    if (evs.filter((e) => e.complete).length !== 1 || !evs[evs.length - 1].complete) fail(idx[0], 'not exactly one complete event, last');
    if (!same(evs[evs.length - 1].value, valueAt(expected, path))) fail(idx[idx.length - 1], 'final value differs from JSON.parse');
    if (type === 'object' || type === 'array') {
      if (rest.length !== 2 || rest[0].kind !== 'open' || rest[1].kind !== 'close') fail(idx[0], 'a container is not open + close');
    } else if (!rest.every((e) => e.kind === 'value')) fail(idx[0], 'a scalar with non-value events');
    else if (type === 'string') {
      let sofar = '';
      for (const e of rest) if ((sofar += e.delta) !== e.value) fail(idx[0], 'string value is not the concatenated deltas');
    } else if (type !== 'number' && rest.length !== 1) fail(idx[0], 'a literal in more than one event');
  }
  // The snapshot at each event is the reference partial parse of the text consumed so far.
  if (snapshots) {
    events.forEach((e, i) => {
      if ((snapshots === true || snapshots(i)) && !same(e.snapshot, referencePartial(text.slice(0, e.offset)))) fail(i, `snapshot differs from the reference ${JSON.stringify(referencePartial(text.slice(0, e.offset)))}`);
    });
  }
  expect(bad, text).toEqual([]);
}

describe('PartialJsonParser: fuzz on random split points', () => {
  it('600 random documents x 4 splits (whole, per character, random 1-8, random 1-64)', () => {
    const r = mulberry32(12345);
    let events = 0;
    let chars = 0;
    for (let seed = 1; seed <= 600; seed++) {
      const doc = generateDoc(seed);
      chars += doc.text.length;
      for (const max of [0, 1, 8, 64]) {
        const evs = run(max === 1 ? [...doc.text].flatMap((ch) => (ch.length === 2 ? [ch[0], ch[1]] : [ch])) : split(doc.text, r, max));
        events += evs.length;
        // Snapshots on every event of short documents, on a sample of long ones (the reference parse is O(n)).
        check(doc, evs, doc.text.length < 800 ? true : (i) => i % 17 === 0 || i === evs.length - 1);
      }
    }
    expect(events).toBeGreaterThan(10_000);
    expect(chars).toBeGreaterThan(20_000);
   }, 30_000);

  it('deep nesting (depth 300), split everywhere', () => {
    const doc = deepDoc(300);
    const r = mulberry32(7);
    for (const max of [0, 1, 5]) check(doc, run(split(doc.text, r, max)), (i) => i % 50 === 0);
  });

  it('edge documents', () => {
    const docs = [
      '0', '-0', '-0.0e-0', '1E+2', '123456789012345678901234567890', '1e400', '-1e-400', '0.1', ' \n\t\r 7 \r\n',
      '""', '"\\ud83d\\ude00"', '"\\uD83D"', '"😀"', '"\\"\\\\\\/\\b\\f\\n\\r\\t"', 'true', 'false', 'null',
      '{}', '[]', '[[]]', '[{}]', '{"":{"":[]}}', '{ }', '[ ]', '{"__proto__":{"x":1}}', '[1,-0,0.5e1,"a",true,null,{}]',
    ];
    const r = mulberry32(99);
    for (const text of docs) {
      const expected = JSON.parse(text);
      for (const max of [0, 1, 2, 3]) {
        const evs = run(split(text, r, max));
        expect(assembleJson(evs)).toEqual(expected);
        for (const e of evs) expect(e.snapshot).toEqual(referencePartial(text.slice(0, e.offset)));
        expect(evs[evs.length - 1].snapshot).toEqual(expected);
      }
    }
    // "__proto__" is an own member, as JSON.parse makes it, not the prototype.
    const v = assembleJson(run(['{"__proto__":{"x":1}}'])) as object;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['__proto__']);
  });
});

describe('PartialJsonParser: events', () => {
  it('emits key before value, strings as deltas, numbers as parsed so far', () => {
    const p = new PartialJsonParser();
    const simple = (evs: JsonEvent[]) => evs.map(({ kind, path, value, complete, delta }) => ({ kind, path, value, complete, ...(delta !== undefined ? { delta } : {}) }));
    expect(simple(p.push('{"items":[{"na'))).toEqual([
      { kind: 'open', path: [], value: {}, complete: false },
      { kind: 'key', path: ['items'], value: undefined, complete: false },
      { kind: 'open', path: ['items'], value: [], complete: false },
      { kind: 'open', path: ['items', 0], value: {}, complete: false },
    ]);
    expect(simple(p.push('me": "Bo'))).toEqual([
      { kind: 'key', path: ['items', 0, 'name'], value: undefined, complete: false },
      { kind: 'value', path: ['items', 0, 'name'], value: 'Bo', complete: false, delta: 'Bo' },
    ]);
    expect(p.snapshot).toEqual({ items: [{ name: 'Bo' }] });
    expect(simple(p.push('b\\u00e9\\ud83d'))).toEqual([{ kind: 'value', path: ['items', 0, 'name'], value: 'Bobé', complete: false, delta: 'bé' }]);
    expect(simple(p.push('\\ude00", "n": -1'))).toEqual([
      { kind: 'value', path: ['items', 0, 'name'], value: 'Bobé😀', complete: true, delta: '😀' },
      { kind: 'key', path: ['items', 0, 'n'], value: undefined, complete: false },
      { kind: 'value', path: ['items', 0, 'n'], value: -1, complete: false },
    ]);
    expect(simple(p.push('2.'))).toEqual([{ kind: 'value', path: ['items', 0, 'n'], value: -12, complete: false }]);
    expect(simple(p.push('5e'))).toEqual([{ kind: 'value', path: ['items', 0, 'n'], value: -12.5, complete: false }]);
    expect(simple(p.push('1}]}'))).toEqual([
      { kind: 'value', path: ['items', 0, 'n'], value: -125, complete: true },
      { kind: 'close', path: ['items', 0], value: { name: 'Bobé😀', n: -125 }, complete: true },
      { kind: 'close', path: ['items'], value: [{ name: 'Bobé😀', n: -125 }], complete: true },
      { kind: 'close', path: [], value: { items: [{ name: 'Bobé😀', n: -125 }] }, complete: true },
    ]);
    expect(p.end()).toEqual([]);
    expect(p.done).toBe(true);
  });

  it('holds back half a surrogate pair split across pushes', () => {
    const p = new PartialJsonParser();
    const a = p.push('"x\ud83d');
    expect(a.map((e) => [e.value, e.delta])).toEqual([['x', 'x']]);
    expect(p.push('\ude00y').map((e) => [e.value, e.delta])).toEqual([['x😀y', '😀y']]);
    expect(p.push('"').map((e) => [e.value, e.delta, e.complete])).toEqual([['x😀y', '', true]]);
  });

  it('a top-level number completes at end() or at whitespace', () => {
    const p = new PartialJsonParser();
    expect(p.push('12').map((e) => [e.value, e.complete])).toEqual([[12, false]]);
    expect(p.push('3').map((e) => [e.value, e.complete])).toEqual([[123, false]]);
    expect(p.end().map((e) => [e.value, e.complete])).toEqual([[123, true]]);
    expect(new PartialJsonParser().push('-0 ').map((e) => [e.value, e.complete])).toEqual([[-0, true]]);
  });

  it('snapshots are immutable and structurally shared', () => {
    const p = new PartialJsonParser();
    const evs = [...p.push('{"done":{"a":[1,2]},"open":['), ...p.push('3,'), ...p.push('4]}'), ...p.end()];
    const snaps = evs.map((e) => e.snapshot as { done?: unknown; open?: unknown[] } | undefined);
    expect(snaps[0]).toEqual({});
    const doneClose = evs.findIndex((e) => e.kind === 'close' && key(e.path) === '["done"]');
    // A finished container is one object from then on, shared by every later snapshot and the close event.
    for (const s of snaps.slice(doneClose)) expect(s!.done).toBe(evs[doneClose].value);
    // Earlier snapshots still show the array as it was.
    expect(snaps.map((s) => s?.open?.length)).toEqual([...Array(10).fill(undefined), 0, 1, 2, 2, 2]);
  });

  it("snapshots: 'push' shares the end-of-push snapshot, 'none' takes none; the events are otherwise identical", () => {
    const doc = generateDoc(4242, { size: 80, maxDepth: 5 });
    const chunks = split(doc.text, mulberry32(1), 6);
    const full = run(chunks, 'event');
    const strip = (evs: JsonEvent[]) => evs.map(({ snapshot: _s, ...rest }) => rest);
    const none = run(chunks, 'none');
    expect(strip(none)).toEqual(strip(full));
    expect(none.every((e) => e.snapshot === undefined)).toBe(true);
    const p = new PartialJsonParser({ snapshots: 'push' });
    let consumed = '';
    const all: JsonEvent[] = [];
    for (const c of chunks) {
      consumed += c;
      const evs = p.push(c);
      all.push(...evs);
      for (const e of evs) expect(e.snapshot).toBe(evs[0].snapshot);
      if (evs.length) expect(evs[0].snapshot).toEqual(referencePartial(consumed));
    }
    all.push(...p.end());
    expect(strip(all)).toEqual(strip(full));
  });

  it('parsePartialJson', () => {
    expect(parsePartialJson('{"a":[1,{"b":"x')).toEqual({ value: { a: [1, { b: 'x' }] }, complete: false });
    expect(parsePartialJson('{"a":[1,{"b":"x"}]} ')).toEqual({ value: { a: [1, { b: 'x' }] }, complete: true });
    expect(parsePartialJson('')).toEqual({ value: undefined, complete: false });
    expect(() => parsePartialJson('{"a" 1')).toThrow(PartialJsonError);
  });

  it('is linear: a 400k-character string and a 20k-element array pushed one character at a time', () => {
    const s = 'x'.repeat(400_000);
    const p = new PartialJsonParser({ snapshots: 'none' });
    const text = `{"s":"${s}","a":[${Array.from({ length: 20_000 }, (_, i) => i).join(',')}]}`;
    const t0 = performance.now();
    let n = 0;
    let last: JsonEvent | undefined;
    for (let i = 0; i < text.length; i++) for (const e of p.push(text[i])) (n++, (last = e));
    p.end();
    const ms = performance.now() - t0;
    expect(last!.value).toEqual({ s, a: Array.from({ length: 20_000 }, (_, i) => i) });
    expect(n).toBeGreaterThan(400_000);
    expect(ms).toBeLessThan(4000); // quadratic behaviour would take minutes
   }, 30_000);
});

describe('type-ahead: announce', () => {
  it('announced keys and types come first and are not repeated by the text', () => {
    const p = new PartialJsonParser();
    const evs = [
      ...p.announce([], 'object'),
      ...p.announce(['name'], 'key'),
      ...p.announce(['name'], 'string'),
      ...p.push('{"name":"Al'),
      ...p.push('"'),
      ...p.announce(['age'], 'key'),
      ...p.push(',"age":4'),
      ...p.push('2}'),
      ...p.end(),
    ];
    expect(evs.map((e) => `${e.kind} ${key(e.path)} ${e.type ?? ''}`.trim())).toEqual([
      'type [] object',
      'key ["name"]',
      'type ["name"] string',
      'open [] object',
      'value ["name"] string',
      'value ["name"] string',
      'key ["age"]',
      'value ["age"] number',
      'value ["age"] number',
      'close [] object',
    ]);
    expect(assembleJson(evs)).toEqual({ name: 'Al', age: 42 });
  });

  it('valueAhead: the path of the value that must start next, until it is announced or starts', () => {
    const p = new PartialJsonParser();
    const ahead: (string | null)[] = [];
    const look = () => ahead.push(p.valueAhead && key(p.valueAhead));
    look(); // the document
    for (const part of ['{', '"a"', ':', '[', '1', ',', ' ', '2]', ',"b":', '"x', '"}']) {
      p.push(part);
      look();
    }
    expect(ahead).toEqual(['[]', null, null, '["a"]', '["a",0]', null, '["a",1]', '["a",1]', null, '["b"]', null, null]);
    const q = new PartialJsonParser();
    q.push('{"k":');
    q.announce(['k'], 'number');
    expect(q.valueAhead).toBeNull(); // announced already
  });

  it('a key announced while it is being generated is not repeated', () => {
    const p = new PartialJsonParser();
    const evs = [...p.push('{"na'), ...p.announce(['name'], 'key'), ...p.push('me":1}'), ...p.end()];
    expect(evs.filter((e) => e.kind === 'key').length).toBe(1);
    expect(assembleJson(evs)).toEqual({ name: 1 });
  });

  it('text that contradicts an announcement throws', () => {
    const a = new PartialJsonParser();
    a.announce(['a'], 'key');
    expect(() => a.push('{"b":1}')).toThrow(expect.objectContaining({ name: 'PartialJsonError', position: 1 }));
    const b = new PartialJsonParser();
    b.push('{"a":');
    b.announce(['a'], 'string');
    expect(() => b.push('12')).toThrow(expect.objectContaining({ position: 5 }));
    const c = new PartialJsonParser();
    c.push('[');
    c.announce([0, 'x'], 'key');
    expect(() => c.push(']')).toThrow(expect.objectContaining({ position: 1 }));
    const d = new PartialJsonParser();
    d.announce([], 'array');
    d.push('[1');
    d.announce([1], 'number');
    expect(() => d.push(']')).toThrow(/array closes before the announced number at \$\[1\] at position 2/);
    const e = new PartialJsonParser();
    e.push('[1] ');
    e.announce([1], 'number');
    expect(() => e.end()).toThrow(/announced number at \$\[1\] never appeared/);
    expect(() => new PartialJsonParser().announce([0], 'key')).toThrow(TypeError);
  });
});

describe('PartialJsonParser: invalid documents', () => {
  /** Throws with the same error for every split; returns it. */
  function fail(text: string, r: () => number): PartialJsonError {
    let first: PartialJsonError | undefined;
    for (const max of [0, 1, 3, 17]) {
      let err: unknown;
      const p = new PartialJsonParser();
      try {
        for (const c of split(text, r, max)) p.push(c);
        p.end();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(PartialJsonError);
      const e = err as PartialJsonError;
      if (first) expect([e.position, e.message]).toEqual([first.position, first.message]);
      first ??= e;
      // Dead after an error: every call throws it again.
      expect(() => p.push('1')).toThrow(e);
    }
    return first!;
  }

  it('hand-picked cases: position and message', () => {
    const r = mulberry32(3);
    const cases: [string, number, RegExp][] = [
      ['', 0, /end of input: expected a JSON value/],
      ['   ', 3, /end of input: expected a JSON value/],
      ['[01]', 2, /expected ',' or '\]'/],
      ['{"a":}', 5, /'}': expected a JSON value/],
      ['"abc', 4, /unterminated string/],
      ['[1,]', 3, /expected a JSON value/],
      ['tru', 3, /end of input inside 'true'/],
      ['trUe', 2, /'U' in literal 'true'/],
      ['[1.]', 3, /digit after the decimal point/],
      ['"\\x"', 2, /Bad escaped character 'x'/],
      ['"\\u12g4"', 5, /Bad Unicode escape: 'g'/],
      ['{"a" 1}', 5, /expected ':'/],
      ['1 2', 2, /non-whitespace character '2' after the JSON value/],
      ['"a\u0001"', 2, /control character U\+0001/],
      ['-', 1, /No number after minus sign/],
      ['[-a]', 2, /No number after minus sign/],
      ['{,}', 1, /expected a property name or '}'/],
      ['{"a":1,}', 7, /property name after ','/],
      ['[1e+]', 4, /Exponent part is missing a number/],
      ['[1,2', 4, /unclosed array/],
      ['{"a":{"b":[]}', 13, /unclosed object/],
      ['[1}', 2, /expected ',' or '\]'/],
      ['\u00a0 1', 0, /expected a JSON value/],
      ['{"a":1}}', 7, /after the JSON value/],
    ];
    for (const [text, pos, msg] of cases) {
      const e = fail(text, r);
      expect([text, e.position]).toEqual([text, pos]);
      expect(e.message).toMatch(msg);
      expect(e.message).toContain(`at position ${pos}`);
    }
    expect(fail('{"a":[1,{"b":x', r).path).toEqual(['a', 1, 'b']);
  });

  it('random corruptions of valid documents: throws exactly when JSON.parse does, at the first bad character', () => {
    const r = mulberry32(2024);
    const insert = ['{', '}', '[', ']', ',', ':', '"', '\\', 'x', '0', '-', '.', 'e', '+', ' ', '\u0001', 't', 'u'];
    let invalid = 0;
    let v8Positions = 0;
    for (let seed = 1; seed <= 1500; seed++) {
      const { text } = generateDoc(seed, { size: 1 + (seed % 30) });
      const at = Math.floor(r() * (text.length + 1));
      const op = r();
      const ch = insert[Math.floor(r() * insert.length)];
      // truncate, delete, insert or replace one character
      const bad = op < 0.25 ? text.slice(0, at) : text.slice(0, at) + (op < 0.5 ? '' : ch) + text.slice(op < 0.75 && op >= 0.5 ? at : at + 1);
      let v8: Error | undefined;
      let value: unknown;
      try {
        value = JSON.parse(bad);
      } catch (e) {
        v8 = e as Error;
      }
      if (!v8) {
        expect(assembleJson(run(split(bad, r, 5)))).toEqual(value);
        continue;
      }
      invalid++;
      const e = fail(bad, r);
      const m = /at position (\d+)/.exec(v8.message);
      if (m) {
        v8Positions++;
        expect([bad, e.position]).toEqual([bad, Number(m[1])]);
      } else if (/Unexpected end of JSON input/.test(v8.message)) expect(e.position).toBe(bad.length);
      else {
        const tok = /^Unexpected token '(.)'/su.exec(v8.message);
        expect(tok, v8.message).not.toBeNull();
        expect(bad[e.position]).toBe(tok![1]);
      }
      // The first bad character: everything before it is a viable prefix.
      if (e.position < bad.length) expect(() => new PartialJsonParser().push(bad.slice(0, e.position))).not.toThrow();
    }
    expect(invalid).toBeGreaterThan(700);
    expect(v8Positions).toBeGreaterThan(200);
   }, 30_000);
});

describe('jsonEvents', () => {
  async function* chunks(text: string, size: number) {
    for (let i = 0; i < text.length; i += size) {
      await Promise.resolve();
      yield text.slice(i, i + size);
    }
  }

  it('turns a text stream into events that assemble to the document', async () => {
    const doc = generateDoc(77, { size: 60, maxDepth: 4 });
    const asm = new JsonAssembler();
    const paths: string[] = [];
    for await (const e of jsonEvents(chunks(doc.text, 3))) {
      asm.apply(e);
      if (!paths.includes(key(e.path))) paths.push(key(e.path));
    }
    expect(asm.complete).toBe(true);
    expect(asm.value).toEqual(JSON.parse(doc.text));
    expect(paths).toEqual(preorder(doc.tree).map(key));
  });

  it('a truncated stream throws PartialJsonError at its end', async () => {
    const seen: JsonEvent[] = [];
    await expect(async () => {
      for await (const e of jsonEvents(chunks('{"a":[1,2', 2))) seen.push(e);
    }).rejects.toThrow(expect.objectContaining({ name: 'PartialJsonError', position: 9 }));
    expect(seen.at(-1)).toMatchObject({ path: ['a', 1], value: 2 });
  });

  it('accepts a plain iterable and can be abandoned early', async () => {
    const it = jsonEvents(['[1', ',2]'], { snapshots: 'none' });
    const first = await it.next();
    expect(first.value).toMatchObject({ kind: 'open', path: [] });
    await it.return(undefined);
    expect((await it.next()).done).toBe(true);
  });
});
