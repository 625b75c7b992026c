// The tokenizer folder's public surface: loading (tokenizer.json or a GGUF's embedded vocabulary), chat templates
// and the streaming detokenizer. packages/model/src/index.ts re-exports it.

export {
  loadTokenizer, MAX_TOKEN_ID,
  type Tokenizer, type TokenizerKind, type AddedTokenInfo, type EncodeOptions, type DecodeOptions, type LoadTokenizerOptions,
} from './tokenizer.ts';
export { tokenizerFromGguf, ggufToTokenizerJson, tokenizerToGgufMetadata, mergesFromScores, GGUF_TOKEN_TYPE, type GgufTokenizerJson } from './gguf-tokenizer.ts';
export {
  applyChatTemplate, renderChat, encodeChat, selectChatTemplate,
  type ChatTemplateSource, type NamedChatTemplate, type ChatMessage, type ApplyChatTemplateOptions,
} from './chat-template.ts';
export { createDetokenizer, type Detokenizer, type DetokenizerOptions } from './detokenizer.ts';
export { tokenBytes } from './token-bytes.ts';
