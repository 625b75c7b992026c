// A chat model for the e2e specs that talk OpenAI chat to stories260K (whose own files ship no tokenizer): its Hugging
// Face folder (config.json, model.safetensors) with @intab/testing's tiny ChatML tokenizer, every id of the model's 512
// decoding to text (t98 … t511 beyond the tiny tokenizer's 98) so that answers show. Serve it with startHubServer.
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
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
