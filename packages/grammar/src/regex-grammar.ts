// compileRegex: a whole document that matches a pattern of the regex subset (see regex.ts), as UTF-8 bytes.

import { compiling } from './budget.ts';
import { GrammarSyntaxError } from './errors.ts';
import type { Grammar } from './grammar.ts';
import { Graph } from './graph.ts';
import { RtnGrammar } from './matcher.ts';
import { RegexError, regexMachine } from './regex.ts';

/**
 * A grammar for documents that match `pattern` in full (anchors at the ends are allowed and redundant).
 * The subset: literals, escapes, classes, `.`, groups, alternation, greedy and lazy quantifiers; no backreferences,
 * lookaround or \b. Matching is over code points; the document is emitted as UTF-8.
 *
 * @example
 * const g = compileRegex('\\d{3}-\\d{4}');
 * matches(g, '555-1234'); // true
 */
export function compileRegex(pattern: string): Grammar {
  return compiling('pattern', () => compile(pattern));
}

function compile(pattern: string): Grammar {
  let machine;
  try {
    machine = regexMachine(pattern, { search: false });
  } catch (e) {
    if (e instanceof RegexError) {
      throw new GrammarSyntaxError(pattern, e.position, e.unsupported ? `${e.problem} (outside the supported regex subset)` : e.problem,
        e.unsupported ? 'Rewrite the pattern without that construct.' : 'Fix the pattern.');
    }
    throw e;
  }
  const g = new Graph();
  const root = g.rule('regex');
  if (!g.embed(root.start, machine, 'raw', root.end)) throw new GrammarSyntaxError(pattern, 0, 'the pattern matches no string', 'Fix the pattern.');
  g.analyze(root);
  return new RtnGrammar(g, root, []);
}
