// The depth check every JSON Schema passes before it is compiled (and an OpenAI request's schema before it is cloned to
// the worker): iterative, so a hostile value cannot overflow the stack here. Its own module, needing only the budgets,
// so the page-side package can run it without the schema compiler.

import { checkBudget } from './budget.ts';

/**
 * The nesting depth of a JSON-like value (objects and arrays; 0 for a scalar), stopping with GrammarBudgetError
 * past BUDGETS.nesting. Values shared by several parents are measured once; a value that contains itself (possible
 * for objects handed over in-thread or by structured clone, never for parsed JSON) is infinitely deep.
 */
export function checkJsonDepth(value: unknown, what: string): number {
  const height = new Map<object, number>(); // -1 while its children are being measured
  const stack: [object, Iterator<unknown>][] = [];
  const enter = (v: unknown): void => {
    if (v === null || typeof v !== 'object') return;
    const h = height.get(v);
    if (h === -1) checkBudget('nesting', Infinity, what);
    if (h !== undefined) return;
    height.set(v, -1);
    stack.push([v, (Array.isArray(v) ? v : Object.values(v)).values()]);
    checkBudget('nesting', stack.length, what);
  };
  let top = 0;
  enter(value);
  while (stack.length) {
    const [v, children] = stack[stack.length - 1]!;
    const next = children.next();
    if (!next.done) {
      enter(next.value);
      continue;
    }
    let h = 1;
    for (const c of Array.isArray(v) ? v : Object.values(v)) if (c !== null && typeof c === 'object') h = Math.max(h, 1 + height.get(c)!);
    checkBudget('nesting', h, what); // reached first by a short path, a shared value may still be deep
    height.set(v, h);
    top = h;
    stack.pop();
  }
  return top;
}
