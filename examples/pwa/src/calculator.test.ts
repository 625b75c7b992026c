// The assistant's calculator: precedence and associativity, functions and constants, the symbols people write, and
// every kind of bad input as a CalculatorError with its problem and position (never a throw of another kind, a NaN or
// an Infinity), hostile input included.
import { describe, expect, it } from 'vitest';
import { IntabError } from 'intab';
import { calculate, CALCULATOR_LIMITS, CalculatorError, type CalculatorProblem } from './calculator.ts';

describe('calculate', () => {
  it.each([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['10 - 4 - 3', 3],
    ['64 / 4 / 2', 8],
    ['2 ^ 3 ^ 2', 512],
    ['2 ** 10', 1024],
    ['-2 ^ 2', -4],
    ['(-2) ^ 2', 4],
    ['2 ^ -1', 0.5],
    ['--3', 3],
    ['-(4 - 6) * +2', 4],
    ['17 % 5', 2],
    ['-17 % 5', -2],
    ['0.1 + 0.2', 0.3],
    ['.5 * 4', 2],
    ['1e3 + 2.5E-1', 1000.25],
    ['1_000_000 / 4', 250000],
    ['sqrt(16) + abs(-3)', 7],
    ['round(2.345, 2)', 2.35],
    ['round(2.5)', 3],
    ['floor(-1.5) + ceil(1.2)', 0],
    ['min(4, 2, 8) + max(1, 9)', 11],
    ['log(1000) + ln(e)', 4],
    ['exp(0)', 1],
    ['sin(pi / 2) + cos(0)', 2],
    ['tan(0)', 0],
    ['2 × 3 ÷ 4 − 1', 0.5],
    ['SQRT(9) * PI / pi', 3],
    ['tau / pi', 2],
    ['  42  ', 42],
    ['-0', 0],
  ])('%s = %d', (expression, value) => {
    expect(calculate(expression)).toBe(value);
  });

  const refused = (expression: string): CalculatorError => {
    try {
      calculate(expression);
    } catch (err) {
      expect(err).toBeInstanceOf(CalculatorError);
      expect(err).toBeInstanceOf(IntabError);
      expect((err as CalculatorError).code).toBe('calculator_error');
      return err as CalculatorError;
    }
    throw new Error(`${expression} was calculated`);
  };

  it.each<[string, CalculatorProblem, number, RegExp]>([
    ['', 'syntax', 0, /empty/],
    ['   ', 'syntax', 0, /empty/],
    ['1 +', 'syntax', 3, /found the end of the expression/],
    ['(1 + 2', 'syntax', 6, /'\)' to close the '\(' at position 0/],
    ['1 + 2)', 'syntax', 5, /Unexpected '\)' at position 5/],
    ['2 3', 'syntax', 2, /Unexpected '3' at position 2 in '2 3': an operator is missing/],
    ['2 * * 3', 'syntax', 4, /Expected a number/],
    ['1 + $', 'syntax', 4, /does not know the character '\$'/],
    ['alert(1)', 'unknown_name', 0, /does not know 'alert'.*sqrt/],
    ['x + 1', 'unknown_name', 0, /does not know 'x'/],
    ['sqrt 4', 'syntax', 5, /'\(' after the function sqrt/],
    ['sqrt()', 'arity', 0, /sqrt\(\) takes 1 argument, not 0/],
    ['sqrt(1, 2)', 'arity', 0, /takes 1 argument, not 2/],
    ['round(1.5, 0.5)', 'domain', 0, /whole digits/],
    ['1 / 0', 'domain', 2, /Division by zero/],
    ['5 % (2 - 2)', 'domain', 2, /Modulo by zero/],
    ['0 ^ -1', 'domain', 2, /division by zero/],
    ['(-8) ^ (1/3)', 'domain', 5, /not a real number/],
    ['sqrt(-1)', 'domain', 0, /sqrt of a negative number/],
    ['ln(0)', 'domain', 0, /not positive/],
    ['10 ^ 400', 'domain', 3, /not a finite number/],
    ['1e999', 'domain', 0, /not a finite number/],
    ['exp(1000)', 'domain', 0, /not a finite number/],
    ['1e308 * 10', 'domain', 6, /not a finite number/],
  ])('%j is refused: %s at %d', (expression, problem, position, message) => {
    const err = refused(expression);
    expect(err.problem).toBe(problem);
    expect(err.position).toBe(position);
    expect(err.message).toMatch(message);
  });

  it('refuses hostile input quickly with a typed error: too long, too deep, not a string', () => {
    expect(refused('1+'.repeat(CALCULATOR_LIMITS.length)).problem).toBe('too_large');
    expect(refused(`${'('.repeat(400)}1${')'.repeat(400)}`).problem).toBe('too_large');
    expect(refused('-'.repeat(500) + '1').problem).toBe('too_large');
    expect(refused('2^'.repeat(300) + '1').problem).toBe('too_large');
    expect(refused(42 as unknown as string).problem).toBe('syntax');
    // Just under the bounds, the same shapes calculate.
    expect(calculate(`${'('.repeat(30)}1${')'.repeat(30)}`)).toBe(1);
    expect(calculate('-'.repeat(40) + '1')).toBe(1);
    expect(calculate('1+'.repeat(400) + '1')).toBe(401);
  });
});
