// The oracle for generated documents, of the grammar tests and the CLI's grammar benchmark: ajv with ajv-formats, by
// the schema's draft (2020-12 and 2019-09 by their classes; draft-04/06/07 through draft-07 mode, draft-04's boolean
// exclusiveMinimum/exclusiveMaximum rewritten to the later numeric form first).

import Ajv from 'ajv';
import Ajv2019 from 'ajv/dist/2019.js';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

type AjvLike = { compile(schema: unknown): ((data: unknown) => boolean) & { errors?: unknown } };

const interop = <T>(m: T): T => ((m as { default?: T }).default ?? m);

function makeAjv(kind: 'draft7' | '2019' | '2020'): AjvLike {
  const Class = interop(kind === '2020' ? Ajv2020 : kind === '2019' ? Ajv2019 : Ajv) as unknown as new (o: object) => AjvLike;
  const ajv = new Class({ strict: false, validateSchema: false, allowUnionTypes: true, unicodeRegExp: true, logger: false });
  interop(addFormats)(ajv as never);
  return ajv;
}

/** Draft-04's boolean exclusiveMinimum/exclusiveMaximum, in place, as the numeric form later drafts (and ajv) read. */
export function numericExclusiveBounds(o: Record<string, unknown>): void {
  for (const [ex, lim] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']] as const) {
    if (typeof o[ex] === 'boolean') {
      if (o[ex] === true && typeof o[lim] === 'number') {
        o[ex] = o[lim];
        delete o[lim];
      } else delete o[ex];
    }
  }
}

/** Draft-04 boolean exclusive bounds → the numeric form ajv's draft-07 mode reads. */
function draft4Bounds(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(draft4Bounds);
  if (v === null || typeof v !== 'object') return v;
  const o: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) o[k] = draft4Bounds(x);
  numericExclusiveBounds(o);
  return o;
}

/** A validator for `schema`, or undefined when ajv cannot compile it (then nothing can be checked). */
export function schemaValidator(schema: unknown): ((data: unknown) => { valid: boolean; errors: unknown }) | undefined {
  const draft = typeof schema === 'object' && schema !== null ? String((schema as Record<string, unknown>).$schema ?? '') : '';
  const kind = draft.includes('2020-12') ? '2020' : draft.includes('2019-09') ? '2019' : 'draft7';
  try {
    const validate = makeAjv(kind).compile(kind === 'draft7' ? draft4Bounds(schema) : schema);
    return (data) => {
      const valid = validate(data);
      return { valid, errors: validate.errors };
    };
  } catch {
    return undefined;
  }
}
