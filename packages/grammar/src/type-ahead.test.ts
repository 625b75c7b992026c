// jsonValueType: the type a schema fixes for the value that starts at a grammar state (type-ahead), and nothing where
// the schema leaves a choice or the state is not at a value's start.
import { describe, expect, test } from 'vitest';
import { advance, anyJson, compileJsonSchema, jsonValueType, type Grammar } from './index.ts';

const KEYS = ['age', 'name', 'ok', 'none', 'list', 'maybe', 'any', 'either', 'obj', 'one'];
const SCHEMA = {
  type: 'object',
  properties: {
    age: { type: 'integer' },
    name: { type: 'string' },
    ok: { type: 'boolean' },
    none: { type: 'null' },
    list: { type: 'array', items: { type: 'number' }, minItems: 1 },
    maybe: { type: 'array', items: { type: 'string' } },
    any: {},
    either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
    obj: { type: 'object' },
    one: { enum: [1, 2, 30] },
  },
  required: KEYS,
  additionalProperties: false,
};
const DOC = '{"age":1,"name":"x","ok":true,"none":null,"list":[1,2],"maybe":[],"any":0,"either":0,"obj":{},"one":30}';

function typeAfter(g: Grammar, prefix: string) {
  const s = advance(g, g.initial, prefix);
  if (s === null) throw new Error(`the grammar refuses ${prefix}`);
  return jsonValueType(g, s);
}

describe('jsonValueType', () => {
  const g = compileJsonSchema(SCHEMA);

  test('the document and each member: the type the schema fixes, or none where it leaves a choice', () => {
    const at = (key: string) => DOC.slice(0, DOC.indexOf(`"${key}":`) + key.length + 3);
    expect(typeAfter(g, '')).toBe('object');
    expect(typeAfter(g, at('age'))).toBe('number');
    expect(typeAfter(g, at('name'))).toBe('string');
    expect(typeAfter(g, at('ok'))).toBe('boolean');
    expect(typeAfter(g, at('none'))).toBe('null');
    expect(typeAfter(g, at('list'))).toBe('array');
    expect(typeAfter(g, at('any'))).toBeUndefined();
    expect(typeAfter(g, at('either'))).toBeUndefined();
    expect(typeAfter(g, at('obj'))).toBe('object');
    expect(typeAfter(g, at('one'))).toBe('number');
  });

  test('array elements: fixed after "[" only where the array cannot be empty; after ","', () => {
    expect(typeAfter(g, DOC.slice(0, DOC.indexOf('[1,') + 1))).toBe('number'); // minItems 1
    expect(typeAfter(g, DOC.slice(0, DOC.indexOf('[1,') + 3))).toBe('number');
    expect(typeAfter(g, DOC.slice(0, DOC.indexOf('[]') + 1))).toBeUndefined(); // ']' may come instead
  });

  test('inside a string or number, after a value, after the document: nothing; a key reads as a string', () => {
    expect(typeAfter(g, '{')).toBe('string'); // the key's quote: callers ask only where a value starts
    expect(typeAfter(g, '{"ag')).toBeUndefined();
    expect(typeAfter(g, '{"age":1')).toBeUndefined();
    expect(typeAfter(g, DOC.slice(0, DOC.indexOf('"x"') + 1))).toBeUndefined();
    expect(typeAfter(g, DOC)).toBeUndefined();
  });

  test('any JSON fixes nothing', () => {
    const a = anyJson();
    expect(typeAfter(a, '')).toBeUndefined();
    expect(typeAfter(a, '{"k":')).toBeUndefined();
  });
});
