// @intab/grammar: structured output in pure TypeScript (no GPU, no WASM).
export {};
