// The grammar of a request's tool calls, in its model's format: the call syntax around each allowed function's name and
// its arguments under the function's `parameters` schema (an alternation over the functions), one call or (with
// parallelToolCalls, where the format knows several) one or more. toolChoice decides where it starts: 'required' and a
// named function from the first token; 'auto' lazily, after free text that reaches the format's trigger (the text
// before it is free, the call after it is held to the grammar: llama.cpp's lazy grammars); 'none' never (the trigger
// can not be written at all). Built from @intab/grammar's combinators under one compile budget, so a hostile list
// (thousands of tools, deep or huge schemas) ends in a GrammarBudgetError instead of a hang.

import { alternation, compileJsonSchema, composing, literal, optional, repetition, sequence, textWithout, type Grammar, type GrammarWarning } from '@intab/grammar';
import type { ToolChoice, ToolDefinition } from '../contract.ts';
import type { ToolFormat } from './formats.ts';

/** What a request with tools asks of the model's output. */
export interface ToolPlan {
  /** 'none': no call may begin; 'auto': text or calls; 'forced': calls from the first token. */
  mode: 'none' | 'auto' | 'forced';
  /** The functions a call may name. */
  allowed: ToolDefinition[];
  /** More than one call per reply (asked, and the format knows it). */
  parallel: boolean;
}

/** toolChoice and parallelToolCalls of a checked request, for a format. */
export function toolPlan(tools: readonly ToolDefinition[], choice: ToolChoice | undefined, parallel: boolean | undefined, format: ToolFormat): ToolPlan {
  const c = choice ?? 'auto';
  const named = typeof c === 'object' ? c.function.name : undefined;
  return {
    mode: c === 'none' ? 'none' : c === 'auto' ? 'auto' : 'forced',
    allowed: named ? tools.filter((t) => t.function.name === named) : [...tools],
    parallel: (parallel ?? true) && format.parallel && named === undefined,
  };
}

/** The schema compiled for one function, its warnings placed under the tool's path (`/tools/2/function/parameters/...`). */
function argumentsGrammar(tool: ToolDefinition, index: number): Grammar {
  const f = tool.function;
  const g = compileJsonSchema(f.parameters ?? { type: 'object' }, { strict: f.strict ?? false, whitespace: 'compact' });
  if (g.warnings.length === 0) return g;
  const warnings: GrammarWarning[] = g.warnings.map((w) => ({ ...w, path: `/tools/${index}/function/parameters${w.path}` }));
  const placed: Grammar = { initial: g.initial, step: (s, b) => g.step(s, b), accepting: (s) => g.accepting(s), finished: (s) => g.finished(s), key: (s) => g.key(s), warnings };
  if (g.counted) placed.counted = (s) => g.counted!(s);
  return placed;
}

/**
 * The output grammar of a request with tools (see the file's header). Typed grammar errors pass through
 * (UnsupportedSchemaError for a strict function whose schema cannot be enforced, GrammarBudgetError past a budget).
 * @example
 * const g = toolGrammar(TOOL_FORMATS.hermes, toolPlan(tools, 'required', true, TOOL_FORMATS.hermes), tools);
 */
export function toolGrammar(format: ToolFormat, plan: ToolPlan, tools: readonly ToolDefinition[]): Grammar {
  return composing(() => {
    // 'none': free text that never contains the trigger. Where the trigger is a token (<tool_call>, [TOOL_CALLS],
    // <|tool_call|>) that bans the token and its spelling in pieces; Llama 3's trigger is text (`{"name"`, how its calls
    // begin), so the reply may not write that text anywhere: the one way to be sure no call begins, at the price of
    // that exact text in prose. Its masks are few (one per character of the trigger matched so far).
    if (plan.mode === 'none') return textWithout(format.trigger);
    const functions = plan.allowed.map((t) => {
      const index = tools.indexOf(t);
      return sequence(literal(`${t.function.name}", "${format.argumentsKey}": `), argumentsGrammar(t, index));
    });
    const call = sequence(literal(`${format.callOpen}{"name": "`), alternation(...functions), literal(`}${format.callClose}`));
    const calls = plan.parallel ? repetition(call, { min: 1, separator: literal(format.separator) }) : call;
    const parts = [format.listOpen ? literal(format.listOpen) : undefined, calls, format.listClose ? literal(format.listClose) : undefined].filter((g): g is Grammar => g !== undefined);
    const list = parts.length === 1 ? parts[0] : sequence(...parts);
    return plan.mode === 'forced' ? list : sequence(textWithout(format.trigger), optional(list));
  });
}
