// The test oracle: ajv 8 (+ ajv-formats, full mode) for the draft a schema declares. Draft-04 schemas are converted
// to draft-07 for ajv (which dropped draft-04): `id` -> `$id`, boolean exclusiveMinimum/Maximum -> numbers.
// Test-only: the JSON-Schema-Test-Suite runs (remote schemas included) of this package's tests; @intab/testing's
// schemaValidator is the one-schema oracle the other tests and the CLI's grammar benchmark share.

import Ajv07 from 'ajv';
import Ajv2019 from 'ajv/dist/2019.js';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { numericExclusiveBounds } from '@intab/testing/schema-validator';
import { draftOf } from './schema-refs.ts';

type Validate = (data: unknown) => boolean;
type AjvLike = { compile(s: unknown): Validate; addSchema(s: unknown, key: string): unknown; removeSchema(s: unknown): unknown };

const def = <T>(m: T): T => ((m as { default?: T }).default ?? m) as T;

function make(cls: unknown, remotes: Record<string, unknown>): AjvLike {
  const C = def(cls) as new (o: object) => AjvLike;
  const ajv = new C({ strict: false, allErrors: false, validateSchema: false, logger: false, unicodeRegExp: true, code: { optimize: false }, inlineRefs: false });
  (def(addFormats) as unknown as (a: AjvLike) => void)(ajv);
  for (const [uri, s] of Object.entries(remotes)) {
    try {
      ajv.addSchema(s, uri);
    } catch {
      // a remote ajv cannot take (another draft): cases that use it fail to compile in ajv and are skipped
    }
  }
  return ajv;
}

export function fromDraft4(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(fromDraft4);
  if (s === null || typeof s !== 'object') return s;
  const o: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s as Record<string, unknown>)) {
    if (k === 'enum' || k === 'const' || k === 'default' || k === 'examples') o[k] = v;
    else o[k] = fromDraft4(v);
  }
  if (typeof o.id === 'string' && o.$id === undefined) {
    o.$id = o.id;
    delete o.id;
  }
  if (typeof o.$schema === 'string' && o.$schema.includes('draft-04')) o.$schema = 'http://json-schema.org/draft-07/schema#';
  numericExclusiveBounds(o);
  return o;
}

// Ajv instances are expensive to create (formats compile their regexes): one per draft and remotes object.
const pools = new Map<unknown, Map<unknown, AjvLike>>();

/** A validator for the schema under the draft it declares (default 2020-12 for the test suite, draft-07 otherwise). */
export function oracle(schema: unknown, opts: { defaultDraft?: number; remotes?: Record<string, unknown> } = {}): Validate {
  const draft = draftOf(schema, opts.defaultDraft ?? 7);
  const remotes = opts.remotes ?? {};
  const cls = draft <= 7 ? Ajv07 : draft === 2019 ? Ajv2019 : Ajv2020;
  const s = draft <= 4 ? fromDraft4(schema) : schema;
  let byRemotes = pools.get(cls);
  if (!byRemotes) pools.set(cls, (byRemotes = new Map()));
  let ajv = byRemotes.get(remotes);
  if (!ajv) byRemotes.set(remotes, (ajv = make(cls, remotes)));
  try {
    const v = ajv.compile(s);
    ajv.removeSchema(s); // keep $ids from colliding with the next schema; the compiled function stays usable
    return v;
  } catch {
    return make(cls, remotes).compile(s); // e.g. an $id registered by an earlier schema
  }
}
