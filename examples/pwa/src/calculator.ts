// The assistant's calculator tool: arithmetic on an expression the model writes, parsed here (a recursive-descent
// parser over a tokenizer) and evaluated, never handed to eval or Function. Numbers, + - * / % ^ (and **),
// parentheses, unary minus, the constants pi and e, and a few functions (sqrt, abs, round, floor, ceil, exp, ln, log,
// sin, cos, tan, min, max). Bad input is a CalculatorError that says where and what, never a crash or a NaN.

import { IntabError } from 'intab';

/** Why an expression could not be calculated. */
export type CalculatorProblem = 'syntax' | 'unknown_name' | 'arity' | 'domain' | 'too_large';

/** An expression the calculator cannot calculate: its `problem`, and the character `position` where it was seen. */
export class CalculatorError extends IntabError {
  static override readonly code: string = 'calculator_error';
  readonly problem: CalculatorProblem;
  readonly position: number;
  constructor(problem: CalculatorProblem, position: number, message: string) {
    super(message);
    this.name = 'CalculatorError';
    this.problem = problem;
    this.position = position;
  }
}

/** Bounds that keep hostile input cheap: the expression's length and how deeply it nests. */
export const CALCULATOR_LIMITS = { length: 1000, depth: 64 } as const;

const CONSTANTS: Record<string, number> = { pi: Math.PI, e: Math.E, tau: 2 * Math.PI };

/** Functions by name: how many arguments each takes ([min, max]) and what it computes. */
const FUNCTIONS: Record<string, { arity: [number, number]; fn: (...xs: number[]) => number; domain?: (...xs: number[]) => string | undefined }> = {
  sqrt: { arity: [1, 1], fn: Math.sqrt, domain: (x) => (x < 0 ? 'sqrt of a negative number' : undefined) },
  abs: { arity: [1, 1], fn: Math.abs },
  round: { arity: [1, 2], fn: (x, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits, domain: (_x, d = 0) => (Number.isInteger(d) && d >= 0 && d <= 15 ? undefined : 'round(x, digits) takes 0 to 15 whole digits') },
  floor: { arity: [1, 1], fn: Math.floor },
  ceil: { arity: [1, 1], fn: Math.ceil },
  exp: { arity: [1, 1], fn: Math.exp },
  ln: { arity: [1, 1], fn: Math.log, domain: (x) => (x <= 0 ? 'ln of a number that is not positive' : undefined) },
  log: { arity: [1, 1], fn: Math.log10, domain: (x) => (x <= 0 ? 'log of a number that is not positive' : undefined) },
  sin: { arity: [1, 1], fn: Math.sin },
  cos: { arity: [1, 1], fn: Math.cos },
  tan: { arity: [1, 1], fn: Math.tan },
  min: { arity: [1, 32], fn: Math.min },
  max: { arity: [1, 32], fn: Math.max },
};

/** The names the calculator knows, for its tool description and its error messages. */
export const CALCULATOR_NAMES = { constants: Object.keys(CONSTANTS), functions: Object.keys(FUNCTIONS) };

type Token = { kind: 'number'; value: number; text: string; at: number } | { kind: 'name'; value: string; at: number } | { kind: 'op'; value: string; at: number } | { kind: 'end'; at: number };

/** Symbols people and models write for the operators, as the operators. */
const SYMBOLS: Record<string, string> = { '×': '*', '·': '*', '÷': '/', '−': '-', '–': '-' };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const number = /^(?:\d+(?:[_]\d+)*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (number) {
      const value = Number(number[0].replaceAll('_', ''));
      tokens.push({ kind: 'number', value, text: number[0], at: i });
      i += number[0].length;
      continue;
    }
    const name = /^[A-Za-z][A-Za-z0-9]*/.exec(text.slice(i, i + 64));
    if (name) {
      tokens.push({ kind: 'name', value: name[0].toLowerCase(), at: i });
      i += name[0].length;
      continue;
    }
    if (text.startsWith('**', i)) {
      tokens.push({ kind: 'op', value: '^', at: i });
      i += 2;
      continue;
    }
    const op = SYMBOLS[c] ?? c;
    if ('+-*/%^(),'.includes(op)) {
      tokens.push({ kind: 'op', value: op, at: i });
      i++;
      continue;
    }
    throw new CalculatorError('syntax', i, `The calculator does not know the character '${c}' at position ${i}: use numbers, + - * / % ^, parentheses and ${CALCULATOR_NAMES.functions.join(', ')}.`);
  }
  tokens.push({ kind: 'end', at: text.length });
  return tokens;
}

/**
 * The value of an arithmetic expression. Precedence, lowest first: + -, then * / % (modulo), then unary minus, then ^
 * (right-associative: 2^3^2 is 2^9; -2^2 is -4, as in mathematics). Results are finite numbers, or a CalculatorError.
 * @example
 * calculate('2 * (3 + 4)'); // 14
 * calculate('sqrt(16) + 2^-1'); // 4.5
 * calculate('1 / 0'); // throws CalculatorError { problem: 'domain' }
 */
export function calculate(expression: string): number {
  if (typeof expression !== 'string') throw new CalculatorError('syntax', 0, 'The calculator needs an expression as a string, e.g. "2 * (3 + 4)".');
  if (expression.length > CALCULATOR_LIMITS.length) {
    throw new CalculatorError('too_large', CALCULATOR_LIMITS.length, `The expression is ${expression.length} characters long; the calculator takes at most ${CALCULATOR_LIMITS.length}.`);
  }
  const tokens = tokenize(expression);
  let next = 0;
  let depth = 0;
  const peek = () => tokens[next];
  const isOp = (value: string) => {
    const t = tokens[next];
    return t.kind === 'op' && t.value === value;
  };
  const describe = (t: Token) => (t.kind === 'end' ? 'the end of the expression' : `'${t.kind === 'number' ? t.text : t.value}' at position ${t.at}`);
  const expect = (value: string, what: string) => {
    if (!isOp(value)) throw new CalculatorError('syntax', peek().at, `Expected ${what} but found ${describe(peek())} in '${expression}'.`);
    next++;
  };
  const finite = (x: number, at: number, what: string) => {
    if (!Number.isFinite(x)) throw new CalculatorError('domain', at, `${what} is not a finite number (it overflows or is undefined).`);
    return x;
  };
  const nest = <T>(at: number, f: () => T): T => {
    if (++depth > CALCULATOR_LIMITS.depth) throw new CalculatorError('too_large', at, `The expression nests deeper than ${CALCULATOR_LIMITS.depth} levels.`);
    try {
      return f();
    } finally {
      depth--;
    }
  };

  const sum = (): number =>
    nest(peek().at, () => {
      let value = product();
      while (isOp('+') || isOp('-')) {
        const op = tokens[next++] as { value: string; at: number };
        const right = product();
        value = finite(op.value === '+' ? value + right : value - right, op.at, `The ${op.value === '+' ? 'sum' : 'difference'} at position ${op.at}`);
      }
      return value;
    });
  const product = (): number => {
    let value = unary();
    while (isOp('*') || isOp('/') || isOp('%')) {
      const op = tokens[next++] as { value: string; at: number };
      const right = unary();
      if (op.value !== '*' && right === 0) throw new CalculatorError('domain', op.at, `${op.value === '/' ? 'Division' : 'Modulo'} by zero at position ${op.at}.`);
      value = finite(op.value === '*' ? value * right : op.value === '/' ? value / right : value % right, op.at, `The result at position ${op.at}`);
    }
    return value;
  };
  const unary = (): number => {
    if (isOp('-') || isOp('+')) {
      const op = tokens[next++] as { value: string; at: number };
      return nest(op.at, () => (op.value === '-' ? -unary() : unary()));
    }
    return power();
  };
  const power = (): number => {
    const base = primary();
    if (!isOp('^')) return base;
    const op = tokens[next++];
    const exponent = nest(op.at, unary);
    if (base === 0 && exponent < 0) throw new CalculatorError('domain', op.at, `0 to a negative power at position ${op.at} is a division by zero.`);
    if (base < 0 && !Number.isInteger(exponent)) throw new CalculatorError('domain', op.at, `A negative number to a fractional power at position ${op.at} is not a real number.`);
    return finite(base ** exponent, op.at, `The power at position ${op.at}`);
  };
  const primary = (): number => {
    const t = tokens[next];
    if (t.kind === 'number') {
      next++;
      return finite(t.value, t.at, `The number at position ${t.at}`);
    }
    if (t.kind === 'op' && t.value === '(') {
      next++;
      const value = nest(t.at, sum);
      expect(')', `')' to close the '(' at position ${t.at}`);
      return value;
    }
    if (t.kind === 'name') {
      next++;
      if (t.value in CONSTANTS && !isOp('(')) return CONSTANTS[t.value];
      const f = FUNCTIONS[t.value];
      if (!f) {
        throw new CalculatorError('unknown_name', t.at, `The calculator does not know '${t.value}' (position ${t.at}): it knows ${CALCULATOR_NAMES.functions.join(', ')} and the constants ${CALCULATOR_NAMES.constants.join(', ')}.`);
      }
      expect('(', `'(' after the function ${t.value}`);
      const args = isOp(')') ? [] : [nest(t.at, sum)];
      while (isOp(',')) {
        next++;
        args.push(nest(t.at, sum));
      }
      expect(')', `')' to close ${t.value}(`);
      const [lo, hi] = f.arity;
      if (args.length < lo || args.length > hi) {
        throw new CalculatorError('arity', t.at, `${t.value}() takes ${lo === hi ? lo : `${lo} to ${hi}`} argument${hi === 1 ? '' : 's'}, not ${args.length} (position ${t.at}).`);
      }
      const domain = f.domain?.(...args);
      if (domain) throw new CalculatorError('domain', t.at, `${domain} at position ${t.at}.`);
      return finite(f.fn(...args), t.at, `${t.value}() at position ${t.at}`);
    }
    throw new CalculatorError('syntax', t.at, `Expected a number, '(' or a function but found ${describe(t)} in '${expression}'.`);
  };

  if (peek().kind === 'end') throw new CalculatorError('syntax', 0, 'The expression is empty: write one such as "2 * (3 + 4)".');
  const value = sum();
  if (peek().kind !== 'end') throw new CalculatorError('syntax', peek().at, `Unexpected ${describe(peek())} in '${expression}': an operator is missing, or a parenthesis does not match.`);
  // -0 reads as 0; 12 significant digits hide binary rounding (0.1 + 0.2 is 0.3).
  return Number(value.toPrecision(12)) + 0;
}
