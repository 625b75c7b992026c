// `intab serve --chat-template`: the model's tokenizer with another Jinja chat template (for a model that ships none,
// or to replace its own). Shared by both runtimes of the server: the page in headless Chromium (serve.ts) and the
// engine in Node (../node/serve-engine.ts).
import type { Tokenizer } from '@intab/model';

/**
 * The tokenizer with `template` as its chat template (the rest is the tokenizer's own, methods bound to it).
 * @example
 * const tokenizer = withChatTemplate(opened.tokenizer, "{% for m in messages %}{{ m['content'] }}{% endfor %}");
 */
export function withChatTemplate(tok: Tokenizer | undefined, template: string | undefined): Tokenizer | undefined {
  if (!tok || template === undefined) return tok;
  return new Proxy(tok, {
    get(target, key) {
      if (key === 'chatTemplate') return template;
      const v = Reflect.get(target, key, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}
