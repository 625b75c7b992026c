// The assistant's tools as the loop runs them: each tool's result as the model reads it, the date and time in a given
// time zone, the notes' search (by keywords, and by meaning where the page gives a search: passages with scores, told
// to the page to cite), the confirmation step of save_note (declined: nothing saved, and the model is told;
// confirmed: saved), and the model's mistakes (an unknown tool, arguments that are not JSON or of the wrong type, a
// bad expression) as `{ error }` results, never a throw.
import { describe, expect, it } from 'vitest';
import { assistantTools, describeTime, runToolCall, SEARCH_RESULTS, type AssistantTool, type ToolContext } from './assistant-tools.ts';
import type { Passage } from './note-index.ts';
import { memoryNotes, NOTE_LIMITS, searchNotes, type Note } from './notes.ts';

const call = (name: string, args: string, id = 'call_1') => ({ id, type: 'function' as const, function: { name, arguments: args } });
const NOW = new Date('2026-12-05T13:04:05Z');

function setup(more: Partial<ToolContext> = {}) {
  const notes = memoryNotes();
  const tools = assistantTools({ notes, now: () => NOW, timeZone: () => 'Asia/Tokyo', locale: () => 'en-US', ...more });
  const asked: { tool: string; args: Record<string, unknown> }[] = [];
  const answer = (yes: boolean) => async (tool: AssistantTool, args: Record<string, unknown>) => {
    asked.push({ tool: tool.definition.function.name, args });
    return yes;
  };
  return { notes, tools, asked, answer };
}

describe('describeTime', () => {
  it('gives the local date, time, weekday and offset of a time zone', () => {
    expect(describeTime(NOW, 'Asia/Tokyo', 'en-US')).toEqual({
      date: '2026-12-05',
      time: '22:04:05',
      weekday: 'Saturday',
      timeZone: 'Asia/Tokyo',
      utcOffset: '+09:00',
      iso: '2026-12-05T22:04:05+09:00',
      text: 'Saturday, December 5, 2026 at 10:04:05 PM GMT+9',
    });
    expect(describeTime(NOW, 'America/St_Johns', 'en-US')).toMatchObject({ date: '2026-12-05', time: '09:34:05', utcOffset: '-03:30' });
    expect(describeTime(NOW, 'UTC', 'en-US')).toMatchObject({ time: '13:04:05', utcOffset: '+00:00', iso: '2026-12-05T13:04:05+00:00' });
    // Across midnight: the local date is the next day.
    expect(describeTime(new Date('2026-12-31T20:00:00Z'), 'Pacific/Kiritimati', 'en-US')).toMatchObject({ date: '2027-01-01', weekday: 'Friday', time: '10:00:00', utcOffset: '+14:00' });
  });
});

describe('searchNotes', () => {
  const note = (title: string, text: string, created: number): Note => ({ id: title, title, text, created });
  const notes = [note('Locker', 'the code is 4512', 1), note('Groceries', 'milk, eggs, locker key', 2), note('Café', 'Ça ouvre à 8h', 3)];
  it('matches every word, in the title before the text, then newest first', () => {
    expect(searchNotes(notes, 'locker').map((n) => n.title)).toEqual(['Locker', 'Groceries']);
    expect(searchNotes(notes, 'LOCKER code').map((n) => n.title)).toEqual(['Locker']);
    expect(searchNotes(notes, 'cafe ca').map((n) => n.title)).toEqual(['Café']);
    expect(searchNotes(notes, 'nothing here')).toEqual([]);
    expect(searchNotes(notes, '').map((n) => n.title)).toEqual(['Café', 'Groceries', 'Locker']);
    expect(searchNotes(notes, '', 1).map((n) => n.title)).toEqual(['Café']);
  });
});

describe('runToolCall', () => {
  it('runs the tools that only read, without asking', async () => {
    const { tools, asked, answer } = setup();
    expect(JSON.parse((await runToolCall(call('calculator', '{"expression": "2 * (3 + 4)"}'), tools, answer(true))).content)).toEqual({ result: { expression: '2 * (3 + 4)', value: 14 } });
    const time = await runToolCall(call('get_current_time', '{}'), tools, answer(true));
    expect(time.status).toBe('done');
    expect(JSON.parse(time.content).result).toMatchObject({ date: '2026-12-05', time: '22:04:05', timeZone: 'Asia/Tokyo' });
    // Empty arguments are an empty object (a function without parameters).
    expect((await runToolCall(call('get_current_time', ''), tools, answer(true))).status).toBe('done');
    expect(JSON.parse((await runToolCall(call('search_notes', '{}'), tools, answer(true))).content)).toEqual({ result: { query: '', by: 'newest', found: 0, results: [] } });
    expect(asked).toEqual([]);
  });

  it('asks before save_note: declined, nothing is saved and the model is told; confirmed, the note is saved and found', async () => {
    const { notes, tools, asked, answer } = setup();
    const args = '{"title": "Locker", "text": "The code is 4512"}';
    const declined = await runToolCall(call('save_note', args), tools, answer(false));
    expect(declined.status).toBe('declined');
    expect(JSON.parse(declined.content)).toEqual({ declined: true, message: 'The user declined this call of save_note: it did not run and nothing was changed.' });
    expect(await notes.list()).toEqual([]);

    const saved = await runToolCall(call('save_note', args), tools, answer(true));
    expect(saved).toEqual({ status: 'done', content: JSON.stringify({ result: { saved: true, title: 'Locker' } }) });
    expect((await notes.list()).map((n) => [n.title, n.text])).toEqual([['Locker', 'The code is 4512']]);
    expect(asked).toEqual([
      { tool: 'save_note', args: { title: 'Locker', text: 'The code is 4512' } },
      { tool: 'save_note', args: { title: 'Locker', text: 'The code is 4512' } },
    ]);

    const found = JSON.parse((await runToolCall(call('search_notes', '{"query": "locker"}'), tools, answer(true))).content);
    expect(found.result).toMatchObject({ query: 'locker', by: 'keywords', found: 1, results: [{ title: 'Locker', text: 'The code is 4512' }] });
  });

  it('searches by meaning where the page can: passages with their note, score and date, cited; keywords without a model', async () => {
    const asked: [string, number][] = [];
    const cited: Passage[][] = [];
    let model = true;
    const passage: Passage = { noteId: 'n1', title: 'Gym', text: 'The locker combination is 4512.', created: Date.parse('2026-12-01T08:00:00Z'), score: 0.81234 };
    const { notes, tools, answer } = setup({
      searchByMeaning: async (query, k) => (asked.push([query, k]), model ? [passage] : undefined),
      cite: (found) => cited.push(found),
    });
    await notes.add({ title: 'Locker', text: 'The code is 4512' });
    const run = async (args: string) => JSON.parse((await runToolCall(call('search_notes', args), tools, answer(true))).content).result;
    expect(await run('{"query": "where is my locker"}')).toEqual({
      query: 'where is my locker',
      by: 'meaning',
      found: 1,
      results: [{ title: 'Gym', text: 'The locker combination is 4512.', score: 0.812, saved: '2026-12-01T08:00:00.000Z' }],
    });
    expect(asked).toEqual([['where is my locker', SEARCH_RESULTS]]);
    expect(cited).toEqual([[passage]]);
    // An empty query lists the newest notes (no search by meaning of nothing).
    expect(await run('{"query": " "}')).toMatchObject({ by: 'newest', found: 1, results: [{ title: 'Locker' }] });
    expect(asked).toHaveLength(1);
    // No embedding model (the page's search says so): keywords.
    model = false;
    expect(await run('{"query": "locker"}')).toMatchObject({ by: 'keywords', found: 1, results: [{ title: 'Locker', text: 'The code is 4512' }] });
    expect(cited.at(-1)!.map((p) => p.title)).toEqual(['Locker']);
  });

  it('saves a longer note by hand than the model may', async () => {
    const { notes, tools, answer } = setup();
    const long = 'y'.repeat(NOTE_LIMITS.text + 1);
    await notes.add({ title: 'By hand', text: long });
    expect(JSON.parse((await runToolCall(call('save_note', JSON.stringify({ title: 'x', text: long })), tools, answer(true))).content)).toEqual({
      error: { code: 'notes_error', message: `A note's text holds at most ${NOTE_LIMITS.text} characters (this one has ${NOTE_LIMITS.text + 1}): shorten it.` },
    });
    await expect(notes.add({ title: 'Too long', text: 'z'.repeat(NOTE_LIMITS.document + 1) })).rejects.toThrow(`A note's text holds at most ${NOTE_LIMITS.document} characters`);
    expect((await notes.list()).map((n) => n.title)).toEqual(['By hand']);
  });

  it("turns the model's mistakes and the tools' refusals into errors the model reads", async () => {
    const { notes, tools, answer } = setup();
    const error = async (name: string, args: string) => {
      const outcome = await runToolCall(call(name, args), tools, answer(true));
      expect(outcome.status).toBe('failed');
      return JSON.parse(outcome.content).error as { code: string; message: string };
    };
    expect(await error('rm_rf', '{}')).toEqual({ code: 'unknown_tool', message: "There is no tool 'rm_rf': the tools are calculator, get_current_time, search_notes, save_note." });
    expect(await error('calculator', '{"expression": ')).toMatchObject({ code: 'invalid_tool_arguments', message: expect.stringMatching(/^calculator: the arguments are not JSON/) });
    expect(await error('calculator', '[1]')).toEqual({ code: 'invalid_tool_arguments', message: 'calculator: the arguments are not a JSON object.' });
    expect(await error('calculator', '{"expression": 12}')).toEqual({ code: 'invalid_tool_arguments', message: "'expression' should be a string, but is 12." });
    expect(await error('calculator', '{}')).toEqual({ code: 'invalid_tool_arguments', message: "'expression' should be a string, but is missing." });
    expect(await error('search_notes', '{"query": null}')).toEqual({ code: 'invalid_tool_arguments', message: "'query' should be a string or left out, but is null." });
    expect(await error('calculator', '{"expression": "1 / 0"}')).toEqual({ code: 'calculator_error', message: 'Division by zero at position 2.' });
    expect(await error('save_note', '{"title": " ", "text": ""}')).toEqual({ code: 'notes_error', message: 'A note needs a title or a text: both are empty.' });
    expect((await error('save_note', JSON.stringify({ title: 'x', text: 'y'.repeat(NOTE_LIMITS.text + 1) }))).message).toBe(`A note's text holds at most ${NOTE_LIMITS.text} characters (this one has ${NOTE_LIMITS.text + 1}): shorten it.`);
    expect(await notes.list()).toEqual([]);
  });

  it('describes every tool with a schema whose required fields are its properties', () => {
    const { tools } = setup();
    expect(tools.map((t) => [t.definition.function.name, t.changesData])).toEqual([
      ['calculator', false],
      ['get_current_time', false],
      ['search_notes', false],
      ['save_note', true],
    ]);
    for (const t of tools) {
      const p = t.definition.function.parameters as { type: string; properties: Record<string, unknown>; required?: string[] };
      expect(p.type).toBe('object');
      for (const r of p.required ?? []) expect(Object.keys(p.properties)).toContain(r);
      expect(t.definition.function.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    }
  });
});
