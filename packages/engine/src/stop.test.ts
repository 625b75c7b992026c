// StopMatcher and the scheduler's budget split, on hand-made inputs: held-back text, matches spanning pieces,
// the earliest of several stops, flush; water-filling shares.
import { describe, expect, test } from 'vitest';
import { StopMatcher } from './stop.ts';
import { waterFill } from './scheduler.ts';

/** Feeds pieces; returns the emitted text and whether (and after which piece) it stopped. */
function run(stops: string[], pieces: string[]) {
  const m = new StopMatcher(stops);
  let out = '';
  for (let i = 0; i < pieces.length; i++) {
    const r = m.push(pieces[i]);
    out += r.text;
    if (r.stopped) return { out, stoppedAt: i, match: r.match };
  }
  return { out: out + m.flush(), stoppedAt: -1 };
}

describe('StopMatcher', () => {
  test('a stop string split over three pieces is found and never emitted', () => {
    expect(run(['lo world'], ['Hel', 'lo wor', 'ld!', 'more'])).toEqual({ out: 'Hel', stoppedAt: 2, match: 'lo world' });
  });
  test('text that could start a stop string is held back, then released when it cannot', () => {
    const m = new StopMatcher(['</s>']);
    expect(m.push('a <')).toEqual({ text: 'a ', stopped: false });
    expect(m.push('/')).toEqual({ text: '', stopped: false });
    expect(m.push('x')).toEqual({ text: '</x', stopped: false });
    expect(m.push('<')).toEqual({ text: '', stopped: false });
    expect(m.flush()).toBe('<');
  });
  test('the earliest match wins ("o t" inside "two three"); every split of the text gives the same output', () => {
    const text = 'one two three four';
    for (let a = 0; a <= text.length; a++) {
      for (let b = a; b <= text.length; b += 3) {
        expect(run(['four', 'o t', 'three'], [text.slice(0, a), text.slice(a, b), text.slice(b)]).out).toBe('one tw');
      }
    }
  });
  test('no stop strings: everything passes through at once', () => {
    expect(new StopMatcher([]).push('abc')).toEqual({ text: 'abc', stopped: false });
    expect(run([], ['a', 'b'])).toEqual({ out: 'ab', stoppedAt: -1 });
  });
});

describe('waterFill', () => {
  test('shares evenly, gives the surplus of short demands to long ones, never exceeds a demand or the budget', () => {
    expect(waterFill([2, 100, 100], 12)).toEqual([2, 5, 5]);
    expect(waterFill([3, 3], 100)).toEqual([3, 3]);
    expect(waterFill([10, 10, 10], 2)).toEqual([1, 1, 0]);
    expect(waterFill([7, 7], 9)).toEqual([5, 4]);
    expect(waterFill([], 5)).toEqual([]);
  });
});
