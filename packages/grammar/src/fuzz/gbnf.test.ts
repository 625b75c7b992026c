// Fuzzing compileGbnf: llama.cpp's published grammars (json, arithmetic, list, chess, c-like) with characters inserted,
// dropped, swapped and spans repeated, and grammars generated rule by rule (literals with escapes, classes, groups,
// {m,n}, references to defined and undefined rules, recursion). Every case must compile (then a walk and sometimes a
// token mask run over it) or end in a typed IntabGrammarError (GrammarSyntaxError, GrammarBudgetError); no case may
// hang.

import { expect, test } from 'vitest';
import { IntabGrammarError } from '../errors.ts';
import { compileGbnf } from '../gbnf.ts';
import { exercise } from './test-exercise.ts';
import { fuzz, fuzzTestTimeout, type Random } from '@intab/testing/fuzz';
import { mutateText } from './test-text-mutations.ts';

const HANG_MS = 5_000;

/** llama.cpp's grammars/ (json.gbnf, arithmetic.gbnf, list.gbnf, chess.gbnf) and a C-like grammar in the same style. */
const REAL = [
  String.raw`root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}`,
  String.raw`root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*`,
  String.raw`root ::= item+

# Excludes various line break characters
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"`,
  String.raw`# Specifies chess moves as a list in algebraic notation, using PGN conventions
root    ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move    ::= (pawn | nonpawn | castle) [+#]?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBKQR])?
castle  ::= "O-O" "-O"?`,
  String.raw`root ::= (declaration)*
declaration ::= dataType identifier "(" parameter? ")" "{" statement* "}"
dataType  ::= "int" ws | "float" ws | "char" ws
identifier ::= [a-zA-Z_] [a-zA-Z_0-9]*
parameter ::= dataType identifier
statement ::=
    ( dataType identifier ws "=" ws expression ";" ) |
    ( identifier ws "=" ws expression ";" ) |
    ( "return" ws expression ";" ) |
    ( "while" "(" condition ")" "{" statement* "}" )
expression ::= term (("+" | "-") term)*
term ::= factor(("*" | "/") factor)*
factor ::= identifier | number | unaryTerm | funcCall | parenExpression
unaryTerm ::= "-" factor
funcCall ::= identifier "(" argList? ")"
parenExpression ::= "(" ws expression ws ")"
argList ::= expression ("," ws expression)*
number ::= [0-9]+ ("." [0-9]+)? \U0001F600?
condition ::= expression relationOperator expression
relationOperator ::= ("<=" | "<" | "==" | "!=" | ">=" | ">")
ws ::= ([ \t\n]+)`,
];

const ALPHABET = ['(', ')', '|', '*', '+', '?', '{', '}', '{2,5}', '{100000}', '{,3}', '"', '\\', '\\x', '\\u00e9', '\\U0010FFFF', '[', ']', '[^', '-', '.', '#', '\n', ' ', '::=', 'root', 'root ::= ', 'x', 'ws', 'a ::= a "x" | "y"\n', '"a"', '[a-z]', '😀'];

/** A random grammar: up to 6 rules whose bodies nest alternatives, sequences, groups and repetitions. */
function generate(r: Random): string {
  const names = ['root', 'a', 'b', 'c', 'item', 'ws'].slice(0, 2 + r.int(5));
  const lit = () => JSON.stringify(r.pick(['', 'x', 'ab', 'é', '😀', '"', '\\', '\n', 'long text'])).replace(/\\u00/g, '\\x');
  const expr = (d: number): string => {
    if (d <= 0 || r.chance(0.3)) {
      switch (r.int(5)) {
        case 0: return lit();
        case 1: return r.pick(['[a-z]', '[^"\\\\]', '[0-9]', '[\\x00-\\x1F]', '[\\u0100-\\uFFFF]', '[z-a]', '[]', '.']);
        case 2: return r.pick(names) + (r.chance(0.05) ? 'undefined' : '');
        default: return lit();
      }
    }
    switch (r.int(4)) {
      case 0: return Array.from({ length: 2 + r.int(3) }, () => expr(d - 1)).join(' ');
      case 1: return '(' + Array.from({ length: 2 + r.int(3) }, () => expr(d - 1)).join(' | ') + ')';
      case 2: return '(' + expr(d - 1) + ')' + r.pick(['*', '+', '?', '{3}', '{0,4}', '{2,}', '{,2}', '{1000}', '{5,3}']);
      default: return expr(d - 1) + ' ' + expr(d - 1);
    }
  };
  return names.map((n) => `${n} ::= ${expr(3)}`).join('\n');
}

test('fuzz: GBNF grammars compile or end in a typed IntabGrammarError, none hangs', async () => {
  const report = await fuzz<{ source: string; walk: Random }>({
    name: 'gbnf',
    seed: 0x5eed02,
    generate: (r, i) => ({ source: i % 3 === 2 ? generate(r) : mutateText(r, r.pick(REAL), ALPHABET, 2), walk: r }),
    run: ({ source, walk }) => exercise(compileGbnf(source), walk),
    typed: (e) => e instanceof IntabGrammarError,
    show: ({ source }) => JSON.stringify(source),
  });
  expect(report.crashes).toEqual([]);
  expect(report.slowestMs, report.slowestCase).toBeLessThan(HANG_MS);
  expect(report.outcomes.compiled ?? 0).toBeGreaterThan(report.cases / 10);
}, fuzzTestTimeout());
