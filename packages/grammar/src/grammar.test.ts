// Unit tests of the grammar core: the regex subset, GBNF, formats (against ajv-formats), integer and number ranges,
// recursion, object/array keywords, negation (not, if/then/else, oneOf), strict vs lenient reporting, whitespace,
// JSON string escapes, and the state contract (immutability, key() equality, finished()).

import { describe, expect, test } from 'vitest';
import {
  anyJson,
  compileGbnf,
  compileJsonSchema,
  compileRegex,
  GrammarSyntaxError,
  InvalidSchemaError,
  matches,
  UnsupportedSchemaError,
  type Grammar,
} from './index.ts';
import { oracle } from './test-oracle.ts';
import { mulberry32 } from '@intab/testing/random';
import { feed, randomDocument } from './testing.ts';

const accepts = (g: Grammar, ...texts: string[]): void => {
  for (const t of texts) expect(matches(g, t), `should accept ${JSON.stringify(t)}`).toBe(true);
};
const rejects = (g: Grammar, ...texts: string[]): void => {
  for (const t of texts) expect(matches(g, t), `should reject ${JSON.stringify(t)}`).toBe(false);
};

/** Random documents of a schema validate with ajv (formats on). */
const generatesValid = (schema: object, n = 40, seed = 1): void => {
  const g = compileJsonSchema(schema);
  const validate = oracle(schema, { defaultDraft: 2020 });
  const r = mulberry32(seed);
  for (let i = 0; i < n; i++) {
    const bytes = randomDocument(g, r, 60);
    expect(bytes).not.toBeNull();
    const text = new TextDecoder().decode(bytes!);
    expect(validate(JSON.parse(text)), text).toBe(true);
  }
};

describe('regex subset', () => {
  test('literals, classes, escapes, quantifiers, groups, alternation', () => {
    accepts(compileRegex('\\d{3}-\\d{4}'), '555-1234');
    rejects(compileRegex('\\d{3}-\\d{4}'), '555-123', '5555-1234');
    const g = compileRegex('(?:ab|c)+[x-z]?\\.\\u0041\\x42');
    accepts(g, 'ab.AB', 'cabx.AB', 'cz.AB');
    rejects(g, '.AB', 'abw.AB');
    accepts(compileRegex('[^a-c\\s]+'), 'xyz', 'é😀');
    rejects(compileRegex('[^a-c\\s]+'), 'xbz', 'x y');
    accepts(compileRegex('a{2,3}?b{2,}'), 'aabb', 'aaabbbbb');
    rejects(compileRegex('a{2,3}?b{2,}'), 'ab', 'aaaabb');
    accepts(compileRegex('\\w+@(?<host>\\w+)\\.com'), 'me@x.com');
    accepts(compileRegex('^(foo|bar)$'), 'foo', 'bar');
    accepts(compileRegex('.'), 'é', '😀');
    rejects(compileRegex('.'), '\n', 'ab');
  });
  test('unsupported constructs are syntax errors with a position', () => {
    for (const p of ['(a)\\1', '(?=a)b', 'a\\bb', '\\p{L}', 'a(']) {
      expect(() => compileRegex(p)).toThrow(GrammarSyntaxError);
    }
    expect(() => compileRegex('ab(?!c)')).toThrow(expect.objectContaining({ position: 2 }));
  });
  test('JSON Schema patterns are unanchored unless anchored', () => {
    const g = compileJsonSchema({ type: 'string', pattern: 'b+' });
    accepts(g, '"abbc"', '"b"');
    rejects(g, '"ac"');
    const a = compileJsonSchema({ type: 'string', pattern: '^b+$|^x' });
    accepts(a, '"bb"', '"xyz"');
    rejects(a, '"abb"', '"bba"');
    const alt = compileJsonSchema({ type: 'string', pattern: '(^|-)z$' });
    accepts(alt, '"z"', '"a-z"');
    rejects(alt, '"az"');
  });
  test('patterns match decoded content: escapes count as the characters they denote', () => {
    const g = compileJsonSchema({ type: 'string', pattern: '^a\\nb"$', maxLength: 4 });
    accepts(g, JSON.stringify('a\nb"'), '"a\\u000ab\\""');
    rejects(g, '"a\\\\nb\\""');
    const len = compileJsonSchema({ type: 'string', minLength: 2, maxLength: 2 });
    accepts(len, '"\\u00e9x"', '"😀😀"', '"\\n\\t"');
    rejects(len, '"😀"', '"abc"');
  });
  test('one class counted (^[a-z0-9]{2,5}$), alone or with minLength/maxLength, is that language', () => {
    const g = compileJsonSchema({ type: 'string', pattern: '^[a-z0-9]{2,5}$' });
    accepts(g, '"ab"', '"a1b2c"');
    rejects(g, '"a"', '"abcdef"', '"aB"', '""');
    const both = compileJsonSchema({ type: 'string', pattern: '^([a-z])+$', minLength: 3, maxLength: 4 });
    accepts(both, '"abc"', '"abcd"');
    rejects(both, '"ab"', '"abcde"', '"ab1"');
    expect(() => compileJsonSchema({ type: 'string', pattern: '^[a-z]{5}$', maxLength: 4 })).toThrow(InvalidSchemaError);
    accepts(compileJsonSchema({ type: 'string', pattern: '^\\d+$' }), '"0"', '"12345678901234567890"');
    const free = compileJsonSchema({ type: 'string', pattern: '[a-z]{3}' }); // unanchored: anything around it
    accepts(free, '"--abc--"');
    rejects(free, '"ab-c"');
  });
  test('\\uXXXX for control and non-ASCII characters, never for printable ASCII', () => {
    const g = compileJsonSchema({ type: 'string' });
    accepts(g, '"\\u00e9"', '"\\u0001"', '"\\u4f60\\n\\/"', '"\\u007f"');
    rejects(g, '"\\u0041"', '"\\u0020"', '"\\u0022"');
    // A class of printable ASCII has no escape at all: no backslash into a dead end.
    const ascii = compileJsonSchema({ type: 'string', pattern: '^[a-z]+$' });
    expect(ascii.step(feed(ascii, ascii.initial, '"')!, 0x5c)).toBeNull();
    const slash = compileJsonSchema({ type: 'string', pattern: '^[a-z/]+$' });
    accepts(slash, '"a\\/b"');
  });
  test('only valid UTF-8: no surrogates, no overlong forms, even under full-range machines', () => {
    const cases: [Grammar, string][] = [
      [compileJsonSchema({ type: 'string', maxLength: 3 }), '"'],
      [compileJsonSchema({ type: 'string', not: { pattern: 'x' } }), '"'],
      [compileRegex('.*'), ''],
      [anyJson(), '"'],
    ];
    for (const [g, prefix] of cases) {
      const s = feed(g, g.initial, prefix);
      expect(s).not.toBeNull();
      const ed = g.step(s!, 0xed);
      expect(ed && g.step(ed, 0xa0)).toBeNull(); // U+D800 would be ED A0 80
      expect(g.step(s!, 0xc0)).toBeNull(); // overlong
      expect(g.step(s!, 0xf5)).toBeNull(); // beyond U+10FFFF
    }
  });
});

describe('GBNF', () => {
  test('rules, alternation across lines, groups, repetition, classes, comments', () => {
    const g = compileGbnf(`
      # a tiny arithmetic language
      root ::= expr
      expr ::= term ([+-] term)*
      term ::= num | "(" expr ")"
      num  ::= [1-9] [0-9]{0,3}
             | "0"
    `);
    accepts(g, '1+2', '(10-2)+3', '0', '9999');
    rejects(g, '01', '1+', '10000', '(1');
  });
  test('literal escapes, negated classes, any char, {m,n}', () => {
    const g = compileGbnf('root ::= "\\"" [^"\\\\]* "\\"" "\\n"? . x{2}\nx ::= "ab"');
    accepts(g, '"hé"\n😀abab', '""Zabab');
    rejects(g, '"a"bab');
  });
  test('errors: no root, undefined rule, left recursion', () => {
    expect(() => compileGbnf('a ::= "x"')).toThrow(/no root rule/);
    expect(() => compileGbnf('root ::= missing')).toThrow(/undefined rule "missing"/);
    expect(() => compileGbnf('root ::= root "x" | "y"')).toThrow(/left recursion/);
    expect(() => compileGbnf('root ::= ("x"')).toThrow(GrammarSyntaxError);
  });
});

describe('formats (subsets of ajv-formats)', () => {
  const check = (format: string, good: string[], bad: string[]): void => {
    const g = compileJsonSchema({ type: 'string', format });
    accepts(g, ...good.map((s) => JSON.stringify(s)));
    rejects(g, ...bad.map((s) => JSON.stringify(s)));
    generatesValid({ type: 'string', format }, 30);
  };
  test('date (days per month, leap years)', () => check('date', ['2024-02-29', '2000-02-29', '1999-12-31'], ['1900-02-29', '2023-02-29', '2024-04-31', '2024-13-01']));
  test('time and date-time (zone required, ranges)', () => {
    check('time', ['23:59:59Z', '00:00:00.123+05:30', '12:00:00-0800'], ['24:00:00Z', '12:60:00Z', '12:00:00']);
    check('date-time', ['2024-02-29T12:00:00Z', '1999-01-01t00:00:00.5+01:00'], ['2024-02-30T12:00:00Z', '2024-01-01 12:00:00']);
  });
  test('email, uuid, uri, ipv4, ipv6', () => {
    check('email', ['a.b+c@example.co.uk'], ['a@', '@b.com', 'a..b@c.com']);
    check('uuid', ['123e4567-e89b-12d3-a456-426614174000'], ['123e4567-e89b-12d3-a456-42661417400']);
    check('uri', ['https://example.com/a?b=c#d', 'urn:isbn:0451450523'], ['example.com', '/relative']);
    check('ipv4', ['192.168.0.1', '0.0.0.0'], ['256.1.1.1', '1.2.3', '01.2.3.4']);
    check('ipv6', ['::1', '2001:db8::ff00:42:8329', '::ffff:192.0.2.128'], ['1:2:3', ':::']);
  });
  test('unknown formats are annotations; formats ajv-formats checks but we cannot are reported', () => {
    accepts(compileJsonSchema({ type: 'string', format: 'color' }), '"anything"');
    expect(() => compileJsonSchema({ type: 'string', format: 'regex' })).toThrow(UnsupportedSchemaError);
  });
});

describe('numbers', () => {
  test('integer ranges are exact (exhaustive over a window)', () => {
    for (const [lo, hi, excl] of [[-13, 7, false], [0, 100, true], [95, 1005, false], [-1000, -999, false]] as const) {
      const g = compileJsonSchema({ type: 'integer', minimum: lo, ...(excl ? { exclusiveMaximum: hi } : { maximum: hi }) });
      for (let v = lo - 30; v <= hi + 30; v++) {
        const inside = v >= lo && (excl ? v < hi : v <= hi);
        expect(matches(g, String(v)), `${v} in [${lo}, ${hi}${excl ? ')' : ']'}`).toBe(inside);
      }
      rejects(g, '-0', '1.0', '1e1', '007');
    }
  });
  test('draft-4 boolean exclusive bounds, multipleOf, int32', () => {
    const d4 = compileJsonSchema({ $schema: 'http://json-schema.org/draft-04/schema#', type: 'integer', minimum: 0, exclusiveMinimum: true, maximum: 3 });
    accepts(d4, '1', '3');
    rejects(d4, '0', '4');
    const m = compileJsonSchema({ type: 'integer', multipleOf: 7, minimum: -30, maximum: 30 });
    for (let v = -40; v <= 40; v++) expect(matches(m, String(v)), String(v)).toBe(v % 7 === 0 && Math.abs(v) <= 30);
    accepts(compileJsonSchema({ type: 'integer', format: 'int32' }), '2147483647');
    rejects(compileJsonSchema({ type: 'integer', format: 'int32' }), '2147483648');
  });
  test('bounded numbers: decimals within bounds, exclusive bounds never round onto the bound', () => {
    const g = compileJsonSchema({ type: 'number', minimum: -1.5, exclusiveMaximum: 2.25 });
    accepts(g, '-1.5', '0', '2.2499', '-0.1', '2');
    rejects(g, '2.25', '-1.51', '2.2500', '3', '1e0', '-0');
    rejects(compileJsonSchema({ type: 'number', exclusiveMaximum: 1 }), '0.99999999999999999999');
    generatesValid({ type: 'number', minimum: 0.001, maximum: 0.002 });
    generatesValid({ type: 'number', exclusiveMinimum: -5, exclusiveMaximum: 5 });
  });
  test('multipleOf 0.01 keeps to integers (exact in ajv); other fractions are reported', () => {
    accepts(compileJsonSchema({ type: 'number', multipleOf: 0.01 }), '3', '-120');
    rejects(compileJsonSchema({ type: 'number', multipleOf: 0.01 }), '0.07');
    expect(() => compileJsonSchema({ type: 'number', multipleOf: 0.3 })).toThrow(UnsupportedSchemaError);
  });
});

describe('objects and arrays', () => {
  test('declared order, required always, optional skippable, extras after declared ones', () => {
    const g = compileJsonSchema({ type: 'object', properties: { a: { type: 'integer' }, b: { type: 'string' } }, required: ['b'] });
    accepts(g, '{"b":"x"}', '{"a":1,"b":"x"}', '{"b":"x","zz":[1,{}]}');
    rejects(g, '{"a":1}', '{"b":"x","a":1}', '{"b":"x","b":"y"}', '{"b":"x","a":1}');
    const closed = compileJsonSchema({ properties: { a: {} }, additionalProperties: false, type: 'object' });
    rejects(closed, '{"a":1,"c":2}');
  });
  test('patternProperties, additionalProperties schema, propertyNames, min/maxProperties', () => {
    const g = compileJsonSchema({
      type: 'object',
      properties: { id: { type: 'integer' } },
      patternProperties: { '^x-': { type: 'string' } },
      additionalProperties: { type: 'boolean' },
      propertyNames: { maxLength: 4 },
      maxProperties: 3,
    });
    accepts(g, '{"id":1,"x-a":"s","ok":true}', '{}');
    rejects(g, '{"x-a":1}', '{"other":true}', '{"ok":1}', '{"id":1,"x-a":"s","ok":true,"no":false}');
    generatesValid({ type: 'object', patternProperties: { '^[a-c]+$': { type: 'integer' }, b: { minimum: 5 } }, additionalProperties: false, minProperties: 1 });
  });
  test('dependentRequired and dependentSchemas', () => {
    const g = compileJsonSchema({ type: 'object', properties: { a: {}, b: {}, c: {} }, dependentRequired: { c: ['a'] }, dependentSchemas: { b: { required: ['c'] } } });
    accepts(g, '{}', '{"a":1,"c":2}', '{"a":1,"b":2,"c":3}');
    rejects(g, '{"c":1}', '{"b":1}', '{"b":1,"c":2}');
  });
  test('prefixItems, items, min/maxItems, contains, decidable uniqueItems', () => {
    const g = compileJsonSchema({ type: 'array', prefixItems: [{ type: 'string' }], items: { type: 'integer' }, minItems: 2, maxItems: 3 });
    accepts(g, '["a",1]', '["a",1,2]');
    rejects(g, '["a"]', '[1,2]', '["a",1,2,3]', '["a","b"]');
    const c = compileJsonSchema({ type: 'array', contains: { const: 5 }, minContains: 2 });
    accepts(c, '[5,1,5]');
    rejects(c, '[5,1]');
    const u = compileJsonSchema({ type: 'array', items: { enum: ['r', 'g', 'b'] }, uniqueItems: true });
    accepts(u, '[]', '["r","g","b"]');
    rejects(u, '["r","r"]', '["r","g","b","r"]');
    expect(() => compileJsonSchema({ type: 'array', items: { type: 'string' }, uniqueItems: true })).toThrow(UnsupportedSchemaError);
  });
  test('recursion through $ref, $defs, $anchor, $id-relative refs and remotes', () => {
    const tree = compileJsonSchema({
      $id: 'https://example.com/tree.json',
      type: 'object',
      properties: { v: { $ref: 'leaf.json' }, kids: { type: 'array', items: { $ref: '#node' } } },
      required: ['v'],
      additionalProperties: false,
      $defs: { node: { $anchor: 'node', $ref: 'https://example.com/tree.json' } },
    }, { remotes: { 'https://example.com/leaf.json': { type: 'integer' } } });
    accepts(tree, '{"v":1}', '{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}');
    rejects(tree, '{"v":"x"}', '{"v":1,"kids":[{}]}');
    expect(() => compileJsonSchema({ $ref: '#/$defs/missing' })).toThrow(InvalidSchemaError);
    expect(() => compileJsonSchema({ $ref: 'https://nowhere.example/x.json' })).toThrow(/options.remotes/);
  });
});

describe('combinators and negation', () => {
  test('allOf merges; anyOf alternates; oneOf is exact when the negations are', () => {
    const all = compileJsonSchema({ allOf: [{ type: 'object', properties: { a: { type: 'integer' } } }, { properties: { a: { minimum: 3 } }, required: ['a'] }] });
    accepts(all, '{"a":3}');
    rejects(all, '{"a":2}', '{}');
    const one = compileJsonSchema({ type: 'object', oneOf: [{ required: ['a'] }, { required: ['b'] }] });
    expect(one.warnings).toEqual([]);
    accepts(one, '{"a":1}', '{"b":1}');
    rejects(one, '{"a":1,"b":2}', '{}');
    generatesValid({ oneOf: [{ type: 'string', minLength: 2 }, { type: 'string', maxLength: 3 }, { type: 'integer' }] });
  });
  test('not, if/then/else', () => {
    const n = compileJsonSchema({ not: { type: ['string', 'null'] } });
    accepts(n, '1', '[]', 'true');
    rejects(n, '"s"', 'null');
    const ite = compileJsonSchema({ type: 'object', properties: { kind: { enum: ['a', 'b'] }, n: {} }, required: ['kind'], if: { properties: { kind: { const: 'a' } } }, then: { properties: { n: { type: 'integer' } }, required: ['n'] }, else: { properties: { n: { type: 'string' } } } });
    accepts(ite, '{"kind":"a","n":1}', '{"kind":"b"}', '{"kind":"b","n":"x"}');
    rejects(ite, '{"kind":"a"}', '{"kind":"a","n":"x"}', '{"kind":"b","n":1}');
    generatesValid({ type: 'object', properties: { kind: { enum: ['a', 'b'] }, n: {} }, required: ['kind'], if: { properties: { kind: { const: 'a' } } }, then: { properties: { n: { type: 'integer' } }, required: ['n'] }, else: { properties: { n: { type: 'string', pattern: '^z' } } } });
  });
  test('enum/const are filtered by their siblings', () => {
    const g = compileJsonSchema({ type: 'string', enum: ['a', 'bb', 3, 'ccc'], maxLength: 2 });
    accepts(g, '"a"', '"bb"');
    rejects(g, '"ccc"', '3');
  });
});

describe('strict vs lenient', () => {
  const schema = { type: 'object', properties: { tags: { type: 'array', items: { type: 'string' }, uniqueItems: true }, p: { type: 'string', pattern: '(a)\\1' } } };
  test('strict lists every unsupported keyword with its path', () => {
    try {
      compileJsonSchema(schema);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(UnsupportedSchemaError);
      const ks = (e as UnsupportedSchemaError).keywords.map((k) => `${k.path} ${k.keyword}`).sort();
      expect(ks).toEqual(['/properties/p pattern', '/properties/tags uniqueItems']);
      expect((e as Error).message).toMatch(/strict: false/);
    }
  });
  test('lenient drops them into warnings', () => {
    const g = compileJsonSchema(schema, { strict: false });
    expect(g.warnings.map((w) => w.keyword).sort()).toEqual(['pattern', 'uniqueItems']);
    accepts(g, '{"tags":["a","a"]}');
  });
  test('not a schema', () => {
    expect(() => compileJsonSchema(42)).toThrow(InvalidSchemaError);
    expect(() => compileJsonSchema({ type: 'strin' })).toThrow(/unknown type/);
    expect(() => compileJsonSchema({ allOf: [{ type: 'string' }, { type: 'integer' }] })).toThrow(/no JSON value/);
  });
});

describe('whitespace', () => {
  test('compact by default; pretty allows newlines and indentation between tokens', () => {
    const schema = { type: 'object', properties: { a: { type: 'array', items: { type: 'integer' } } } };
    rejects(compileJsonSchema(schema), '{ "a": [1] }');
    const pretty = compileJsonSchema(schema, { whitespace: 'pretty' });
    accepts(pretty, JSON.stringify({ a: [1, 2] }, null, 2), JSON.stringify({ a: [1, 2] }), '{"a": []}');
    rejects(pretty, '{ "a":[1]}', '{"a":[1] }');
    const r = mulberry32(5);
    for (let i = 0; i < 20; i++) {
      const text = new TextDecoder().decode(randomDocument(pretty, r, 80)!);
      expect(Array.isArray(JSON.parse(text).a ?? [])).toBe(true);
    }
  });
});

describe('state contract', () => {
  test('states are immutable values; key() is equal for equal futures reached by different paths', () => {
    const g = compileJsonSchema({ type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a', 'b'], additionalProperties: false });
    const s1 = feed(g, g.initial, '{"a":"xy')!;
    const s2 = feed(g, g.initial, '{"a":"\\u00e9é')!;
    expect(g.key(s1)).toBe(g.key(s2));
    const before = g.key(s1);
    feed(g, s1, '","b":"z"}');
    expect(g.key(s1)).toBe(before); // old states stay valid
    expect(g.key(feed(g, s1, '"')!)).not.toBe(before);
    const done = feed(g, g.initial, '{"a":"","b":""}')!;
    expect(g.accepting(done) && g.finished(done)).toBe(true);
    expect(g.step(done, 0x20)).toBeNull();
    const num = feed(anyJson(), anyJson().initial, '12');
    expect(num).not.toBeNull();
  });
  test('a number at the top level is accepting but not finished', () => {
    const g = compileJsonSchema({ type: 'integer' });
    const s = feed(g, g.initial, '12')!;
    expect(g.accepting(s)).toBe(true);
    expect(g.finished(s)).toBe(false);
  });
  test('anyJson accepts any JSON value; root: object requires an object', () => {
    accepts(anyJson(), '1', '"x"', '{"a":[1,2,{"b":null}],"c":true}', '[]', '-0.5e3');
    rejects(anyJson(), '{', '[1,]', '01', 'tru');
    rejects(anyJson({ root: 'object' }), '[]', '1');
    accepts(anyJson({ root: 'object' }), '{"k":[]}');
  });
});
