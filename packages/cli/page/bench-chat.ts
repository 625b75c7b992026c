// `intab bench chat` in the page: a conversation sent turn by turn through one engine, with the prefix cache off
// and on (alternating, so the adapter's drift hits both alike), one JSON record per turn and a summary; with
// --preload the first request's TTFT after a preloaded system prompt; with --persist a 2,048-token prefix saved to
// the Origin Private File System and restored into a freshly loaded engine, against recomputing it.

import type { ChatMessage, Chunk, Engine, GenerateRequest } from '@intab/engine';
import { encodeChat, renderChat, type Tokenizer } from '@intab/model';
import { median, round, type ChatJob, type LoadedEngine } from './shared.ts';

type Report = (record: unknown) => void;

interface Turn {
  ids: number[];
  text: string;
  promptTokens: number;
  cachedTokens: number;
  ttftMs: number;
}

/** Runs the chat bench; `load` loads a fresh engine (the model's weights uploaded again). */
export async function benchChat(job: ChatJob & { maxTokens: number; seed: number }, tokenizer: Tokenizer | undefined, load: () => Promise<LoadedEngine>, report: Report): Promise<void> {
  if (!tokenizer) throw new Error('bench chat sends chat messages: the model needs a tokenizer (intab make-model --tokenizer qwen3 writes one)');
  const conversation = job.conversation ?? BUILT_IN;
  const system = conversation.find((m) => m.role === 'system');
  const users = conversation.filter((m) => m.role === 'user');
  const template = tokenizer.chatTemplate !== undefined;
  const request = (history: ChatMessage[], cache: boolean): GenerateRequest =>
    template ? { messages: history, maxTokens: job.maxTokens, temperature: 0, cache } : { prompt: transcript(history), stop: ['\nUser:'], maxTokens: job.maxTokens, temperature: 0, cache };
  const turn = async (engine: Engine, r: GenerateRequest): Promise<Turn> => {
    const chunks = await collect(engine, r);
    const last = chunks[chunks.length - 1];
    const m = last.metrics!;
    return { ids: chunks.flatMap((c) => c.ids), text: chunks.map((c) => c.text).join(''), promptTokens: m.promptTokens, cachedTokens: m.cachedTokens, ttftMs: m.ttftMs };
  };

  let loaded = await load();
  const { engine, info } = loaded;
  const facts = { model: { arch: info.arch, layers: info.layers, hidden: info.hidden, vocab: info.vocab }, adapter: info.adapter, template };
  try {
    // Unmeasured: one prefill as long as the last turn will be, so scratch buffers have their final size.
    const longest = tokenizer.encode(conversation.map((m) => m.content).join('\n'), { addSpecialTokens: true }).length + users.length * (job.maxTokens + 16);
    await turn(engine, { promptIds: Array.from({ length: Math.min(longest, info.contextLength - 2) }, (_, i) => 3 + (i % (info.vocab - 3))), maxTokens: 2, temperature: 0, cache: false });

    if (job.preload && system) {
      const first = [system, users[0]];
      // Without a template the system prompt is the transcript's first line.
      const prefix = template ? undefined : transcript([system]).replace(/\nAssistant:$/, '');
      const firstIds = template ? encodeChat(tokenizer, renderChat(tokenizer, first.map((m) => ({ ...m })), { addGenerationPrompt: true })) : tokenizer.encode(transcript(first), { addSpecialTokens: true });
      const systemIds = template ? encodeChat(tokenizer, renderChat(tokenizer, [{ ...system }], { addGenerationPrompt: false })) : tokenizer.encode(prefix!, { addSpecialTokens: true });
      const repeats = job.repeats ?? 5;
      const none: number[] = [];
      const preloaded: number[] = [];
      const alone: number[] = [];
      const ratios: number[] = [];
      const preloadMs: number[] = [];
      let systemTokens = 0;
      let cached = 0;
      let identical = true;
      for (let i = 0; i < repeats; i++) {
        const plain = await turn(engine, request(first, false));
        none.push(plain.ttftMs);
        // The request's own tokens alone (what follows the system prompt), prefilled from nothing.
        const userOnly = () => turn(engine, { promptIds: firstIds.slice(systemIds.length), maxTokens: job.maxTokens, temperature: 0, cache: false });
        const withPreload = async () => {
          const p = await engine.preload(prefix === undefined ? { messages: [system] } : { prompt: prefix });
          systemTokens = p.tokens;
          preloadMs.push(p.ms);
          const after = await turn(engine, request(first, true));
          await engine.release(p.id);
          engine.prefixCache!.clear();
          return after;
        };
        // The two measured requests back to back, in alternating order: the adapter's drift hits both alike.
        const [after, own] = i % 2 === 0 ? [await withPreload(), await userOnly()] : (([o, a]) => [a, o])([await userOnly(), await withPreload()]);
        preloaded.push(after.ttftMs);
        alone.push(own.ttftMs);
        ratios.push(after.ttftMs / own.ttftMs);
        cached = after.cachedTokens;
        identical &&= after.ids.join() === plain.ids.join();
      }
      report({
        type: 'bench',
        bench: 'chat',
        preload: true,
        system_tokens: systemTokens,
        prompt_tokens: firstIds.length,
        cached_tokens: cached,
        preload_ms: round(median(preloadMs)),
        ttft_ms_no_preload: round(median(none)),
        ttft_ms_preloaded: round(median(preloaded)),
        ttft_ms_user_only: round(median(alone)),
        preloaded_vs_user_only: round(median(ratios)),
        speedup: round(median(none) / median(preloaded)),
        repeats,
        samples: { no_preload: none.map(round), preloaded: preloaded.map(round), user_only: alone.map(round) },
        identical_ids: identical,
        ...facts,
      });
    }

    const modes = job.cacheModes === 'both' || job.cacheModes === undefined ? (['off', 'on'] as const) : ([job.cacheModes] as const);
    const history = new Map<string, ChatMessage[]>(modes.map((m) => [m, system ? [system] : []]));
    const turns = new Map<string, Turn[]>(modes.map((m) => [m, []]));
    for (const [i, user] of users.entries()) {
      // Alternate which goes first, so a drift of the adapter's speed is shared.
      const order = i % 2 === 0 ? modes : [...modes].reverse();
      for (const mode of order) {
        const h = history.get(mode)!;
        h.push(user);
        const t = await turn(engine, request(h, mode === 'on'));
        h.push({ role: 'assistant', content: t.text });
        turns.get(mode)!.push(t);
        report({ type: 'bench', bench: 'chat', prefix_cache: mode, turn: i, prompt_tokens: t.promptTokens, cached_tokens: t.cachedTokens, ttft_ms: round(t.ttftMs), ids: t.ids });
      }
    }
    if (modes.length === 2) {
      const on = turns.get('on')!;
      const off = turns.get('off')!;
      report({
        type: 'bench',
        bench: 'chat',
        summary: true,
        identical_ids: on.every((t, i) => t.ids.join() === off[i].ids.join()),
        ttft_ratio_last_turn: round(off[off.length - 1].ttftMs / on[on.length - 1].ttftMs),
        ttft_growth_on: round(on[on.length - 1].ttftMs / on[0].ttftMs),
        ttft_growth_off: round(off[off.length - 1].ttftMs / off[0].ttftMs),
        turns: on.length,
        prompt_tokens_last_turn: on[on.length - 1].promptTokens,
        cached_tokens_last_turn: on[on.length - 1].cachedTokens,
        max_tokens: job.maxTokens,
        ...facts,
      });
    }

    if (job.persist) {
      const n = job.persistTokens ?? 2048;
      // A long prefix of real text: the conversation, repeated as needed, cut at n tokens.
      let text = conversation.map((m) => m.content).join('\n');
      while (tokenizer.encode(text, { addSpecialTokens: true }).length < n + 1) text += `\n${text}`;
      const prefix = tokenizer.encode(text, { addSpecialTokens: true }).slice(0, n);
      const question = tokenizer.encode('\nSo, in one sentence:', { addSpecialTokens: false });
      const ask: GenerateRequest = { promptIds: [...prefix, ...question], maxTokens: job.maxTokens, temperature: 0 };
      engine.prefixCache!.clear();
      const computed = await engine.preload({ promptIds: prefix });
      const reference = await turn(engine, ask);
      const saved = await engine.saveCache();
      await engine.destroy();
      loaded = await load();
      await loaded.engine.restore(loaded.info);
      const restored = loaded.info.restored;
      const again = await turn(loaded.engine, ask);
      report({
        type: 'bench',
        bench: 'chat',
        persist: true,
        prefix_tokens: n,
        recompute_ms: round(computed.ms),
        restore_ms: restored ? round(restored.ms) : null,
        restore_speedup: restored ? round(computed.ms / restored.ms) : null,
        save_ms: round(saved.ms),
        bytes: saved.bytes,
        pages: saved.pages,
        restored_tokens: restored?.tokens ?? 0,
        cached_tokens: again.cachedTokens,
        identical_ids: again.ids.join() === reference.ids.join(),
        warnings: loaded.info.warnings ?? [],
        ...facts,
      });
    }
  } finally {
    await loaded.engine.destroy();
  }
}

/** A model without a chat template gets the conversation as a plain transcript (as the demo chat sends it). */
function transcript(messages: ChatMessage[]): string {
  return `${messages.map((m) => `${m.role[0].toUpperCase()}${m.role.slice(1)}: ${m.content}`).join('\n')}\nAssistant:`;
}

async function collect(engine: Engine, r: GenerateRequest): Promise<Chunk[]> {
  const id = await engine.start(r);
  const out: Chunk[] = [];
  for (;;) {
    const c = await engine.next(id);
    if (c.error) throw c.error; // a failed request ends with its error
    out.push(c);
    if (c.finishReason) return out;
  }
}

/** The conversation without --conversation: a system prompt and eight user messages of a plausible chat. */
export const BUILT_IN: ChatMessage[] = [
  {
    role: 'system',
    content:
      'You are a helpful assistant for a small bakery. You answer questions about opening hours, ingredients, allergens, orders and delivery. ' +
      'Keep answers short and friendly, say when you are not sure, and never invent prices: point to the price list on the website instead. ' +
      'The bakery is open Tuesday to Sunday from 7 am to 6 pm, and closes at 2 pm on Sundays.',
  },
  { role: 'user', content: 'Hi! Are you open on Mondays?' },
  { role: 'user', content: 'Ok. Do you have anything without gluten?' },
  { role: 'user', content: 'Which of your breads contain nuts? My daughter is allergic to hazelnuts.' },
  { role: 'user', content: 'Can I order a birthday cake for next Saturday, for about twelve people?' },
  { role: 'user', content: 'What flavours can the cake be, and can you write a name on it?' },
  { role: 'user', content: 'Do you deliver to the north side of town, or do I have to pick it up?' },
  { role: 'user', content: 'If I pick it up, what is the latest time on Saturday?' },
  { role: 'user', content: 'Great, thanks. Can you summarise what we agreed in two sentences?' },
];
