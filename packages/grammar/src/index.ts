// @intab/grammar: structured output in pure TypeScript (no GPU, no WASM).
// Core: JSON Schema / regex / GBNF compiled to byte-level matchers (the Grammar interface).
export type { CompileOptions, Grammar, GrammarState, GrammarWarning } from './grammar.ts';
export { advance, completeDocument, matches } from './grammar.ts';
export { anyJson, compileJsonSchema } from './schema-compile.ts';
export { compileRegex } from './regex-grammar.ts';
export { compileGbnf } from './gbnf.ts';
export { alternation, composing, literal, optional, repetition, sequence, startedAt, textWithout } from './compose.ts';
export { jsonValueType } from './type-ahead.ts';
export { GrammarBudgetError, GrammarSyntaxError, IntabGrammarError, InvalidSchemaError, UnsupportedSchemaError, type GrammarBudgetName, type UnsupportedKeyword } from './errors.ts';
// Token masks and partial-JSON streaming (their own folders):
export * from './partial/index.ts';
export * from './tokens/index.ts';
