// The combinators against what their languages are: literal text, sequences, alternations whose options share a
// prefix, repetitions with a separator, free text without a stop string, a grammar begun at a later state; keys equal
// for states with the same future, and counted strings passed through to the token masks.
import { describe, expect, test } from 'vitest';
import { alternation, composing, literal, optional, repetition, sequence, startedAt, textWithout } from './compose.ts';
import { advance, matches } from './grammar.ts';
import { compileJsonSchema } from './schema-compile.ts';
import { GrammarBudgetError } from './errors.ts';
import { BUDGETS, PEAKS } from './budget.ts';

describe('grammar combinators', () => {
  test('literal and sequence', () => {
    const g = sequence(literal('<a>'), literal('b'), literal('</a>'));
    expect(matches(g, '<a>b</a>')).toBe(true);
    expect(matches(g, '<a>b</a')).toBe(false);
    expect(matches(g, '<a>b</a>x')).toBe(false);
    expect(g.finished(advance(g, g.initial, '<a>b</a>')!)).toBe(true);
  });

  test('alternation over names that prefix each other', () => {
    const g = sequence(literal('"'), alternation(literal('get'), literal('get_time'), literal('add')), literal('"'));
    for (const ok of ['"get"', '"get_time"', '"add"']) expect(matches(g, ok)).toBe(true);
    for (const bad of ['"ge"', '"get_"', '"get_timex"', '"adds"', '""']) expect(matches(g, bad)).toBe(false);
  });

  test('repetition with a separator, at least once or not at all', () => {
    const item = sequence(literal('['), compileJsonSchema({ type: 'integer' }), literal(']'));
    const one = repetition(item, { min: 1, separator: literal(',') });
    expect(matches(one, '[1]')).toBe(true);
    expect(matches(one, '[1],[22],[-3]')).toBe(true);
    expect(matches(one, '')).toBe(false);
    expect(matches(one, '[1],')).toBe(false);
    expect(matches(one, '[1][2]')).toBe(false);
    const any = repetition(item, { min: 0, separator: literal(',') });
    expect(matches(any, '')).toBe(true);
    expect(matches(any, '[5],[6]')).toBe(true);
  });

  test('textWithout: any text but the stop string; then a lazy part begun by it', () => {
    const free = textWithout('<tool_call>');
    for (const ok of ['', 'hello', 'a <tool_cal b', '<<tool_cal', 'ü→🧪']) expect(matches(free, ok)).toBe(true);
    for (const bad of ['<tool_call>', 'x<tool_call>y', '<<tool_call>']) expect(matches(free, bad)).toBe(false);
    const lazy = sequence(textWithout('<t>'), optional(sequence(literal('<t>'), compileJsonSchema({ enum: [1, 2] }), literal('</t>'))));
    for (const ok of ['just text', 'pre <t>1</t>', '<t>2</t>', '<<t>1</t>']) expect(matches(lazy, ok), ok).toBe(true);
    for (const bad of ['pre <t>3</t>', '<t>1</t> more', '<t>1']) expect(matches(lazy, bad), bad).toBe(false);
    // Once the trigger is written, only the grammar after it is live: the call must go on.
    const s = advance(lazy, lazy.initial, 'pre <t>')!;
    expect(lazy.accepting(s)).toBe(false);
    expect(lazy.step(s, 'x'.charCodeAt(0))).toBeNull();
  });

  test('startedAt begins a grammar where a prefix left it', () => {
    const g = compileJsonSchema({ type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] });
    const rest = startedAt(g, advance(g, g.initial, '{"a":')!);
    expect(matches(rest, '12}')).toBe(true);
    expect(matches(rest, '{"a":12}')).toBe(false);
  });

  test('keys: equal for states with the same future, apart otherwise', () => {
    const g = sequence(literal('x'), compileJsonSchema({ type: 'array', items: { type: 'integer' } }));
    const a = advance(g, g.initial, 'x[1,')!;
    const b = advance(g, g.initial, 'x[22,')!;
    const c = advance(g, g.initial, 'x[')!;
    expect(g.key(a)).toBe(g.key(b));
    expect(g.key(a)).not.toBe(g.key(c));
    expect(g.key(g.initial)).not.toBe(g.key(a));
  });

  test('counted strings pass through to the token masks', () => {
    const schema = compileJsonSchema({ type: 'string', maxLength: 40 });
    const g = sequence(literal('k='), schema);
    const s = advance(g, g.initial, 'k="abc')!;
    const c = g.counted!(s);
    expect(c).not.toBeNull();
    expect(c!.left).toBe(37);
    // The unbounded string, at the same place of the composed grammar: it takes a closing quote and any length.
    expect(g.accepting(advance(g, c!.free, 'x'.repeat(100) + '"')!)).toBe(true);
  });

  test('a construction of many parts spends one compile budget', () => {
    // Each schema alone compiles within the budget; thirty of them in one construction do not.
    const defs: Record<string, unknown> = { a14: { type: 'string' } };
    for (let i = 0; i < 14; i++) defs[`a${i}`] = { anyOf: [{ $ref: `#/$defs/a${i + 1}` }, { $ref: `#/$defs/a${i + 1}` }] };
    const costly = { $defs: defs, $ref: '#/$defs/a0' }; // 2^14 branches
    PEAKS.compileWork = 0;
    compileJsonSchema(costly, { strict: false });
    const alone = PEAKS.compileWork;
    expect(alone).toBeGreaterThan(BUDGETS.compileWork / 30);
    expect(() => composing(() => alternation(...Array.from({ length: 30 }, () => compileJsonSchema(costly, { strict: false }))))).toThrow(GrammarBudgetError);
  });
});
