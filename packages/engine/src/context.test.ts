// The context rules as plain functions (the engine applies them in start(); packages/intab/src/context.test.ts runs
// them end to end): which turns truncate: 'oldest' may drop, the fewest it drops, the room it keeps, and how
// fitMaxTokens clamps or refuses.
import { describe, expect, test } from 'vitest';
import type { ChatMessage } from './contract.ts';
import { droppableTurns, fitMaxTokens, truncateOldest, truncationRoom } from './context.ts';
import { ContextLengthExceededError } from './errors.ts';
import { resolveOptions } from './sequence.ts';

const m = (role: string, content = role): ChatMessage => ({ role, content });
const options = (o: { maxTokens?: number; strictContext?: boolean } = {}) => resolveOptions({ promptIds: [1], ...o }, 10, false);

describe('droppableTurns', () => {
  test('whole turns before the last user message, never a system message', () => {
    expect(droppableTurns([m('system'), m('user'), m('assistant'), m('user'), m('assistant'), m('tool'), m('user')])).toEqual([[1, 2], [3, 4, 5]]);
    // A greeting before the first question is a turn of its own; a system message between turns stays.
    expect(droppableTurns([m('developer'), m('assistant'), m('user'), m('system'), m('assistant'), m('user'), m('assistant')])).toEqual([[1], [2, 4]]);
    expect(droppableTurns([m('system'), m('user')])).toEqual([]);
    expect(droppableTurns([m('assistant'), m('assistant')])).toEqual([[0]]);
  });
});

describe('truncateOldest', () => {
  // One token per message: the prompt is the messages' indices.
  const chat = [m('system'), m('user', 'a'), m('assistant', 'b'), m('user', 'c'), m('assistant', 'd'), m('user', 'e'), m('assistant', 'f'), m('user', 'g')];
  const encode = (ms: ChatMessage[]) => ms.map((x) => chat.indexOf(x));

  test('drops the fewest oldest turns that make it fit, encoding O(log turns) times', () => {
    let encodes = 0;
    const counted = (ms: ChatMessage[]) => (encodes++, encode(ms));
    expect(truncateOldest(chat, counted, (p) => p.length <= 4)).toEqual({ prompt: [0, 5, 6, 7], dropped: 4, tokens: 4 });
    expect(encodes).toBeLessThanOrEqual(3);
    expect(truncateOldest(chat, encode, (p) => p.length <= 8)).toEqual({ prompt: [0, 1, 2, 3, 4, 5, 6, 7], dropped: 0, tokens: 0 });
    // Nothing fits: every droppable turn goes (the caller refuses what is left).
    expect(truncateOldest(chat, encode, () => false)).toEqual({ prompt: [0, 7], dropped: 6, tokens: 6 });
  });
});

describe('fitMaxTokens', () => {
  const at = { limit: 512, limitedBy: 'context' as const, pinnedPages: 0 };
  test('clamps maxTokens to what the prompt leaves; strictContext refuses a given one; a prompt with no room is refused', () => {
    const o = options({ maxTokens: 512 });
    fitMaxTokens(12, o, at);
    expect(o.maxTokens).toBe(500);
    const fits = options({ maxTokens: 500, strictContext: true });
    fitMaxTokens(12, fits, at);
    expect(fits.maxTokens).toBe(500);
    expect(() => fitMaxTokens(12, options({ maxTokens: 501, strictContext: true }), at)).toThrow(ContextLengthExceededError);
    // A default maxTokens (256) is clamped even with strictContext: the caller asked for none.
    const byDefault = options({ strictContext: true });
    fitMaxTokens(400, byDefault, at);
    expect(byDefault.maxTokens).toBe(112);
    expect(() => fitMaxTokens(511, options({ maxTokens: 1 }), at)).not.toThrow();
    for (const prompt of [512, 600]) {
      expect(() => fitMaxTokens(prompt, options(), at)).toThrow(expect.objectContaining({ reason: 'prompt', promptTokens: prompt, limit: 512 }));
    }
  });

  test('truncation keeps room for min(maxTokens, limit / 4), all of a strict maxTokens', () => {
    expect(truncationRoom(options({ maxTokens: 512 }), 512)).toBe(128);
    expect(truncationRoom(options({ maxTokens: 32 }), 512)).toBe(32);
    expect(truncationRoom(options({ maxTokens: 300, strictContext: true }), 512)).toBe(300);
    expect(truncationRoom(options({ maxTokens: 8 }), 2)).toBe(1);
  });
});
