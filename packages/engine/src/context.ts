// Context limits, as a chat user expects them. One sequence holds at most `limit` tokens, prompt and reply together:
// the model's context length, or fewer when the KV-cache pages it can have (less those pinned by preloads it does not
// start with) hold fewer. The engine applies these rules in start(), before any work and whatever the backend:
//   - a prompt that leaves no room for one new token is refused (ContextLengthExceededError, reason 'prompt');
//   - a maxTokens past the limit is clamped to what is left, so the stream ends with 'length' exactly at the limit;
//     strictContext: true refuses it instead (reason 'max-tokens');
//   - a chat with truncate: 'oldest' drops its oldest turns until the prompt leaves room for a reply.

import type { ChatMessage } from './contract.ts';
import { ContextLengthExceededError } from './errors.ts';
import type { PrefixCache } from './prefix-cache.ts';
import type { ResolvedOptions } from './sequence.ts';

/** The most tokens one sequence can hold, and what sets it. */
export interface ContextLimit {
  /** Prompt + generated tokens, at most. */
  limit: number;
  limitedBy: 'context' | 'kv-cache';
  /** KV pages pinned by preloads the prompt does not start with (they count against the KV-cache's room). */
  pinnedPages: number;
}

/** truncate: 'oldest' keeps room for min(maxTokens, limit / TRUNCATE_ROOM_DIVISOR) new tokens (all of a strict maxTokens). */
export const TRUNCATE_ROOM_DIVISOR = 4;

/**
 * What one sequence with this prompt can hold: the model's context, or every KV page not pinned by a preload the
 * prompt does not start with, whichever is less.
 */
export function contextLimit(
  runner: { config: { maxContext: number }; kv: { pages: number; pageSize: number } },
  cache: PrefixCache | undefined,
  prompt: readonly number[],
): ContextLimit {
  const pinnedPages = cache ? cache.pinnedPagesOutside(cache.lookup(prompt)) : 0;
  const kvLimit = (runner.kv.pages - pinnedPages) * runner.kv.pageSize;
  const maxContext = runner.config.maxContext;
  return { limit: Math.min(maxContext, kvLimit), limitedBy: kvLimit < maxContext ? 'kv-cache' : 'context', pinnedPages };
}

/**
 * Refuses a prompt that leaves no room for one new token, and clamps options.maxTokens to what the limit leaves
 * after the prompt (refused instead when the caller gave maxTokens with strictContext; a default is always clamped).
 * @example
 * fitMaxTokens(500, options, { limit: 512, limitedBy: 'context', pinnedPages: 0 }); // options.maxTokens <= 12 now
 */
export function fitMaxTokens(promptTokens: number, options: ResolvedOptions, at: ContextLimit, extra: { chat?: boolean; truncatedMessages?: number } = {}): void {
  const fields = {
    promptTokens,
    maxTokens: options.maxTokens,
    limit: at.limit,
    limitedBy: at.limitedBy,
    pinnedPages: at.limitedBy === 'kv-cache' ? at.pinnedPages : 0,
    ...extra,
  };
  if (promptTokens >= at.limit) throw new ContextLengthExceededError({ ...fields, reason: 'prompt' });
  if (promptTokens + options.maxTokens <= at.limit) return;
  if (options.strictContext && options.maxTokensGiven) throw new ContextLengthExceededError({ ...fields, reason: 'max-tokens' });
  options.maxTokens = at.limit - promptTokens;
}

/** The new tokens truncate: 'oldest' keeps room for: all of a strict maxTokens, else min(maxTokens, limit / 4), at least 1. */
export function truncationRoom(options: ResolvedOptions, limit: number): number {
  if (options.strictContext && options.maxTokensGiven) return options.maxTokens;
  return Math.max(1, Math.min(options.maxTokens, Math.floor(limit / TRUNCATE_ROOM_DIVISOR)));
}

const isSystem = (m: ChatMessage) => m.role === 'system' || m.role === 'developer';

/**
 * The turns truncate: 'oldest' may drop, oldest first, as lists of message indices: every message before the last
 * turn (which starts at the last user message) that is not a system message, cut where a user message starts one.
 * A turn goes whole (a user message with the replies and tool results after it), so the chat left still alternates
 * as chat templates expect.
 * @example
 * droppableTurns([sys, u1, a1, u2, a2, u3]); // [[1, 2], [3, 4]]
 */
export function droppableTurns(messages: readonly ChatMessage[]): number[][] {
  let last = messages.findLastIndex((m) => m.role === 'user');
  if (last < 0) last = messages.findLastIndex((m) => !isSystem(m));
  const turns: number[][] = [];
  for (let i = 0; i < last; i++) {
    if (isSystem(messages[i])) continue;
    if (turns.length === 0 || messages[i].role === 'user') turns.push([]);
    turns[turns.length - 1].push(i);
  }
  return turns;
}

/** What truncateOldest kept. */
export interface Truncation {
  /** The prompt's ids with `dropped` messages left out. */
  prompt: number[];
  /** Messages dropped (0: the whole chat fits). */
  dropped: number;
  /** Prompt tokens that saved. */
  tokens: number;
}

/**
 * The prompt of `messages` with the fewest oldest turns dropped that makes `fits(prompt)` true (every droppable turn
 * dropped when none does: the caller then refuses a prompt that alone cannot fit). System messages and the last turn
 * are always kept. Encodes O(log turns) times: dropping more turns never lengthens the prompt.
 * @example
 * const t = truncateOldest(chat, (m) => encodeChat(tok, renderChat(tok, m)), (p) => p.length + 64 <= 512);
 */
export function truncateOldest(messages: readonly ChatMessage[], encode: (messages: ChatMessage[]) => number[], fits: (prompt: readonly number[]) => boolean): Truncation {
  const full = encode([...messages]);
  const turns = droppableTurns(messages);
  if (turns.length === 0 || fits(full)) return { prompt: full, dropped: 0, tokens: 0 };
  const prompts = new Map<number, number[]>([[0, full]]);
  const promptWithout = (k: number): number[] => {
    let p = prompts.get(k);
    if (!p) {
      const gone = new Set(turns.slice(0, k).flat());
      prompts.set(k, (p = encode(messages.filter((_, i) => !gone.has(i)))));
    }
    return p;
  };
  // The smallest k in [1, turns] whose prompt fits (turns when none does).
  let lo = 1;
  let hi = turns.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (fits(promptWithout(mid))) hi = mid;
    else lo = mid + 1;
  }
  const prompt = promptWithout(lo);
  return { prompt, dropped: turns.slice(0, lo).reduce((n, t) => n + t.length, 0), tokens: full.length - prompt.length };
}
