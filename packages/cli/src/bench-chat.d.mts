// Types of bench-chat.mjs for the TypeScript tests.
export declare function readConversation(path: string): { role: string; content: string }[];
export declare function chatJobFromFlags(
  flags: Record<string, string | boolean>,
  model: { kind: 'gguf' | 'hf'; files: string[]; urls: string[] },
): {
  mode: 'chat';
  kind: 'gguf' | 'hf';
  files: string[];
  urls: string[];
  conversation?: { role: string; content: string }[];
  cacheModes: 'on' | 'off' | 'both';
  maxTokens: number;
  temperature: number;
  seed: number;
  quantize?: string | boolean;
  preload: boolean;
  persist: boolean;
  persistTokens: number;
  repeats: number;
};
export declare function benchChat(flags: Record<string, string | boolean>): Promise<number>;
