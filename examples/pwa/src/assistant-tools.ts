// The functions the offline assistant lets its model call: a calculator (calculator.ts, no eval), the date and time
// in the user's time zone, a search of the user's notes (by meaning with an embedding model, note-index.ts; else by
// keywords), whose passages the page cites, and save_note, which changes data and so runs only once the user confirms
// it. runToolCall() turns one call of the model into the `tool` message's content (JSON): the result, an error the
// model can read and correct, or that the user declined. No DOM here: the page asks to confirm.

import { IntabError } from 'intab';
import { parseArguments, type FunctionTool, type ToolCallMade } from '@intab/example-chat/tool-calls';
import { calculate, CALCULATOR_LIMITS, CALCULATOR_NAMES } from './calculator.ts';
import { keywordPassages, type Passage } from './note-index.ts';
import { NOTE_LIMITS, tooLong, type NotesStore } from './notes.ts';

/** A call whose arguments the tool cannot take (`argument` names which). */
export class ToolArgumentError extends IntabError {
  static override readonly code: string = 'invalid_tool_arguments';
  readonly argument: string;
  constructor(argument: string, message: string) {
    super(message);
    this.name = 'ToolArgumentError';
    this.argument = argument;
  }
}

/** One function the model may call. */
export interface AssistantTool {
  definition: FunctionTool;
  /** It changes the app's data: each call waits for the user to confirm it. */
  changesData: boolean;
  /** What a call would do, in words, for the question the user confirms (tools that change data). */
  confirmation?(args: Record<string, unknown>): string;
  /** Runs a call (its arguments parsed): the result, as JSON-able data. */
  run(args: Record<string, unknown>): Promise<unknown>;
}

/** Passages search_notes returns to the model. */
export const SEARCH_RESULTS = 5;

/** What the tools read besides their arguments: the notes, the clock, the user's time zone and locale. */
export interface ToolContext {
  notes: NotesStore;
  /**
   * The best `k` passages for a query by meaning (note-index.ts's search), or undefined when there is no embedding
   * model: then search_notes matches keywords. [keywords]
   */
  searchByMeaning?(query: string, k: number): Promise<Passage[] | undefined>;
  /** Told the passages each search_notes call returned, for the page to cite under the answer. */
  cite?(passages: Passage[]): void;
  now?: () => Date;
  /** An IANA time zone [the browser's]. */
  timeZone?: () => string;
  /** A BCP 47 locale for dates in words [the browser's]. */
  locale?: () => string;
}

/** An argument of `args` as a string (`optional`: undefined when absent). */
function stringArg(args: Record<string, unknown>, name: string, optional: true): string | undefined;
function stringArg(args: Record<string, unknown>, name: string, optional?: false): string;
function stringArg(args: Record<string, unknown>, name: string, optional = false): string | undefined {
  const v = args[name];
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string') throw new ToolArgumentError(name, `'${name}' should be a string${optional ? ' or left out' : ''}, but is ${v === undefined ? 'missing' : JSON.stringify(v)}.`);
  return v;
}

/** The browser's time zone and locale. */
const browserTimeZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;
const browserLocale = () => Intl.DateTimeFormat().resolvedOptions().locale;

/**
 * The date and time `now` in `timeZone`: the local date and time (ISO forms), the weekday, the zone and its UTC offset,
 * and the whole in words in `locale`.
 * @example
 * describeTime(new Date('2026-12-05T13:04:05Z'), 'Asia/Tokyo', 'en-US');
 * // { date: '2026-12-05', time: '22:04:05', weekday: 'Saturday', timeZone: 'Asia/Tokyo', utcOffset: '+09:00',
 * //   iso: '2026-12-05T22:04:05+09:00', text: 'Saturday, December 5, 2026 at 10:04:05 PM GMT+9' }
 */
export function describeTime(now: Date, timeZone: string, locale: string): { date: string; time: string; weekday: string; timeZone: string; utcOffset: string; iso: string; text: string } {
  const parts = (options: Intl.DateTimeFormatOptions) => {
    const out: Record<string, string> = {};
    for (const p of new Intl.DateTimeFormat('en-US', { timeZone, ...options }).formatToParts(now)) out[p.type] = p.value;
    return out;
  };
  const p = parts({ year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', weekday: 'long', timeZoneName: 'longOffset' });
  const offset = p.timeZoneName === 'GMT' ? '+00:00' : p.timeZoneName.replace('GMT', '');
  const date = `${p.year}-${p.month}-${p.day}`;
  const time = `${p.hour}:${p.minute}:${p.second}`;
  const text = new Intl.DateTimeFormat(locale, { timeZone, dateStyle: 'full', timeStyle: 'long' }).format(now);
  return { date, time, weekday: p.weekday, timeZone, utcOffset: offset, iso: `${date}T${time}${offset}`, text };
}

/**
 * The best `k` passages of the notes for `query`, and how they were found: by meaning (with an embedding model), by
 * keywords (every word in the note), or the newest notes (an empty query). What search_notes returns, and the
 * sidebar's search shows.
 * @example
 * const { by, found } = await findPassages({ notes, searchByMeaning: (q, k) => index.search(q, k) }, 'locker', 5);
 */
export async function findPassages(context: Pick<ToolContext, 'notes' | 'searchByMeaning'>, query: string, k: number): Promise<{ by: 'meaning' | 'keywords' | 'newest'; found: Passage[] }> {
  const meaning = query.trim() && context.searchByMeaning ? await context.searchByMeaning(query, k) : undefined;
  if (meaning) return { by: 'meaning', found: meaning };
  return { by: query.trim() ? 'keywords' : 'newest', found: keywordPassages(await context.notes.list(), query, k) };
}

/**
 * The assistant's tools, over `context`.
 * @example
 * const tools = assistantTools({ notes: await openNotes() });
 * await engine.chat.completions.create({ messages, tools: tools.map((t) => t.definition) });
 */
export function assistantTools(context: ToolContext): AssistantTool[] {
  const now = context.now ?? (() => new Date());
  const timeZone = context.timeZone ?? browserTimeZone;
  const locale = context.locale ?? browserLocale;
  return [
    {
      definition: {
        type: 'function',
        function: {
          name: 'calculator',
          description: `Calculates an arithmetic expression exactly: numbers, + - * / % (modulo) ^ (power), parentheses, the constants ${CALCULATOR_NAMES.constants.join(', ')} and the functions ${CALCULATOR_NAMES.functions.join(', ')}. Use it for any arithmetic rather than working it out.`,
          parameters: {
            type: 'object',
            properties: { expression: { type: 'string', description: 'The expression, e.g. "2 * (3 + 4) / sqrt(16)"', maxLength: CALCULATOR_LIMITS.length } },
            required: ['expression'],
            additionalProperties: false,
          },
        },
      },
      changesData: false,
      run: async (args) => {
        const expression = stringArg(args, 'expression');
        return { expression, value: calculate(expression) };
      },
    },
    {
      definition: {
        type: 'function',
        function: {
          name: 'get_current_time',
          description: "The current date, time and weekday in the user's time zone.",
          parameters: { type: 'object', properties: {}, additionalProperties: false },
        },
      },
      changesData: false,
      run: async () => describeTime(now(), timeZone(), locale()),
    },
    {
      definition: {
        type: 'function',
        function: {
          name: 'search_notes',
          description: "Searches the user's saved notes and returns the passages that best answer the query, with their note's title: by meaning where the app has an embedding model, else every word of the query must appear. An empty query gives the newest notes. Cite the notes you use by title.",
          parameters: {
            type: 'object',
            properties: { query: { type: 'string', description: 'What to look for, e.g. "where is my locker"', maxLength: 200 } },
            additionalProperties: false,
          },
        },
      },
      changesData: false,
      run: async (args) => {
        const query = stringArg(args, 'query', true) ?? '';
        const { by, found } = await findPassages(context, query, SEARCH_RESULTS);
        context.cite?.(found);
        return {
          query,
          by,
          found: found.length,
          results: found.map((p) => ({ title: p.title, text: p.text, ...(p.score === undefined ? {} : { score: Math.round(p.score * 1000) / 1000 }), saved: new Date(p.created).toISOString() })),
        };
      },
    },
    {
      definition: {
        type: 'function',
        function: {
          name: 'save_note',
          description: 'Saves a note on this device for the user (they confirm it first). Use it when the user asks you to remember or note something.',
          parameters: {
            type: 'object',
            properties: {
              title: { type: 'string', description: 'A short title', maxLength: NOTE_LIMITS.title },
              text: { type: 'string', description: 'What to keep', maxLength: NOTE_LIMITS.text },
            },
            required: ['title', 'text'],
            additionalProperties: false,
          },
        },
      },
      changesData: true,
      confirmation: (args) => `Save a note titled ${JSON.stringify(String(args.title ?? ''))} on this device?`,
      run: async (args) => {
        // The store keeps longer notes (a document the user adds); what the model saves stays within its schema.
        const text = stringArg(args, 'text');
        if (text.trim().length > NOTE_LIMITS.text) throw tooLong(text.trim(), NOTE_LIMITS.text);
        const note = await context.notes.add({ title: stringArg(args, 'title'), text });
        return { saved: true, title: note.title };
      },
    },
  ];
}

/** How a call went: its tool message's content (JSON text) and, for the page, which way it ended. */
export interface ToolCallOutcome {
  status: 'done' | 'failed' | 'declined';
  /** The `tool` message's content: `{ "result" }`, `{ "error": { code, message } }` or `{ "declined": true, message }`. */
  content: string;
}

/**
 * Runs one call of the model: finds its tool, parses its arguments, asks `confirm` first when the tool changes data,
 * and runs it. Never throws for the model's mistakes or the tool's failures: they become `{ error }` for the model to
 * read (an IntabError's code and message; anything else is the tool's bug and is rethrown).
 * @example
 * const outcome = await runToolCall(call, tools, (tool, args) => askTheUser(tool, args));
 * messages.push({ role: 'tool', tool_call_id: call.id, content: outcome.content });
 */
export async function runToolCall(
  call: ToolCallMade,
  tools: readonly AssistantTool[],
  confirm: (tool: AssistantTool, args: Record<string, unknown>) => Promise<boolean>,
): Promise<ToolCallOutcome> {
  const failed = (code: string, message: string): ToolCallOutcome => ({ status: 'failed', content: JSON.stringify({ error: { code, message } }) });
  const tool = tools.find((t) => t.definition.function.name === call.function.name);
  if (!tool) return failed('unknown_tool', `There is no tool '${call.function.name}': the tools are ${tools.map((t) => t.definition.function.name).join(', ')}.`);
  const parsed = parseArguments(call.function.arguments);
  if ('error' in parsed) return failed('invalid_tool_arguments', `${call.function.name}: ${parsed.error}.`);
  if (tool.changesData && !(await confirm(tool, parsed.args))) {
    return { status: 'declined', content: JSON.stringify({ declined: true, message: `The user declined this call of ${call.function.name}: it did not run and nothing was changed.` }) };
  }
  try {
    return { status: 'done', content: JSON.stringify({ result: await tool.run(parsed.args) }) };
  } catch (err) {
    if (err instanceof IntabError) return failed(err.code, err.message);
    throw err;
  }
}
