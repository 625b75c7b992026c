// Tool calling inside the engine: the formats' registry, how a chat with tools is rendered, the calls' grammar and the
// reader that turns a reply into content and ToolCallDeltas. ToolSession ties them together for one request.

export { TOOL_FORMATS, callHead, detectToolFormat, type ToolFormat } from './formats.ts';
export { ToolCallParser, type ToolCallParserOptions, type ToolParseOutput } from './parser.ts';
export { toolGrammar, toolPlan, type ToolPlan } from './grammar.ts';
export { formatChat, genericToolPrompt, templateChat, templateTools, withGenericTools } from './render.ts';
