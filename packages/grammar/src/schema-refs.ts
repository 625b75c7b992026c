// Where every subschema lives: its base URI (after $id / draft-4 `id`), its JSON pointer for error paths, and the
// resources and anchors that $ref can name. Remote documents come from options.remotes (nothing is fetched).

import { InvalidSchemaError } from './errors.ts';
import { checkJsonDepth } from './json-depth.ts';

export type Schema = boolean | Record<string, unknown>;

export interface SchemaInfo {
  base: string;
  /** JSON pointer from the root document (or `uri#pointer` inside a remote). */
  path: string;
  draft: number;
}

const ROOT_BASE = 'intab:/root.json';
// Keywords whose values are schemas, arrays of schemas, or maps of schemas. Only these are indexed for $id and
// $anchor (an "$id" inside an unknown keyword is not an identifier); $ref may still point anywhere by JSON pointer.
const SCHEMA_KEYWORDS = new Set(['items', 'prefixItems', 'additionalItems', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'contains', 'propertyNames', 'not', 'if', 'then', 'else', 'allOf', 'anyOf', 'oneOf', 'contentSchema']);
const MAP_KEYWORDS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies']);

export function draftOf(schema: unknown, fallback: number): number {
  if (schema === null || typeof schema !== 'object') return fallback;
  const s = (schema as Record<string, unknown>).$schema;
  if (typeof s !== 'string') return fallback;
  if (s.includes('draft-03')) return 3;
  if (s.includes('draft-04')) return 4;
  if (s.includes('draft-06')) return 6;
  if (s.includes('draft-07')) return 7;
  if (s.includes('2019-09')) return 2019;
  if (s.includes('2020-12')) return 2020;
  return fallback;
}

function stripFragment(uri: string): string {
  const i = uri.indexOf('#');
  return i < 0 ? uri : uri.slice(0, i);
}

function resolveUri(ref: string, base: string): string | null {
  try {
    return new URL(ref, base).href;
  } catch {
    // non-hierarchical bases (urn:…) only resolve fragment-only refs
    if (ref.startsWith('#')) return stripFragment(base) + ref;
    try {
      return new URL(ref).href;
    } catch {
      return null;
    }
  }
}

export class Registry {
  private readonly info = new WeakMap<object, SchemaInfo>();
  private readonly resources = new Map<string, unknown>();
  private readonly anchors = new Map<string, unknown>();
  private readonly remotes: Record<string, unknown>;
  private readonly loaded = new Set<string>();
  readonly root: unknown;

  constructor(root: unknown, remotes: Record<string, unknown> = {}) {
    this.root = root;
    this.remotes = {};
    // Indexing and compiling recurse along the nesting: it is bounded before anything else looks at the schema.
    checkJsonDepth(root, 'the schema nests objects and arrays');
    for (const [k, v] of Object.entries(remotes)) {
      const uri = resolveUri(k, ROOT_BASE);
      if (uri === null) throw new InvalidSchemaError('', `options.remotes has a key that is not a URI: ${JSON.stringify(k).slice(0, 80)}`, 'Key remotes by their absolute URI.');
      checkJsonDepth(v, `the remote schema ${uri} nests objects and arrays`);
      this.remotes[stripFragment(uri)] = v;
    }
    this.index(root, ROOT_BASE, '', draftOf(root, 2020), true);
  }

  /** Synthetic schemas (negations) report at, and resolve refs from, their owner's location. */
  setInfo(s: object, info: SchemaInfo): void {
    this.info.set(s, info);
  }

  infoOf(s: object): SchemaInfo {
    return this.info.get(s) ?? { base: ROOT_BASE, path: '', draft: 2020 };
  }

  private index(node: unknown, base: string, path: string, draft: number, isSchema: boolean): void {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      node.forEach((v, i) => this.index(v, base, `${path}/${i}`, draft, isSchema));
      return;
    }
    const o = node as Record<string, unknown>;
    if (this.info.has(o)) return;
    draft = draftOf(o, draft);
    if (isSchema) {
      const id = typeof o.$id === 'string' ? o.$id : draft <= 4 && typeof o.id === 'string' ? o.id : null;
      if (id !== null) {
        const abs = resolveUri(id, base);
        if (abs !== null) {
          if (id.startsWith('#') && draft <= 7) {
            // draft <= 7: "$id": "#name" is a plain-name anchor
            this.anchors.set(stripFragment(base) + id, o);
          } else {
            base = stripFragment(abs);
            if (!this.resources.has(base)) this.resources.set(base, o);
          }
        }
      }
      if (base === ROOT_BASE && path === '' && !this.resources.has(ROOT_BASE)) this.resources.set(ROOT_BASE, o);
      for (const key of ['$anchor', '$dynamicAnchor']) {
        const a = o[key];
        if (typeof a === 'string') this.anchors.set(`${base}#${a}`, o);
      }
      this.info.set(o, { base, path, draft });
    }
    for (const [k, v] of Object.entries(o)) {
      if (v === null || typeof v !== 'object') continue;
      const child = `${path}/${escapePointer(k)}`;
      if (!isSchema) this.index(v, base, child, draft, true); // a map's values
      else if (MAP_KEYWORDS.has(k) && !Array.isArray(v)) this.index(v, base, child, draft, false);
      else if (SCHEMA_KEYWORDS.has(k)) this.index(v, base, child, draft, true);
    }
  }

  /** Resolves a $ref found in `from`; returns the target or throws InvalidSchemaError. */
  resolve(ref: string, from: object): { schema: Schema; info: SchemaInfo | null } {
    const fromInfo = this.infoOf(from);
    const abs = resolveUri(ref, fromInfo.base);
    if (abs === null) throw new InvalidSchemaError(fromInfo.path, `$ref ${JSON.stringify(ref)} is not a valid URI reference`, 'Fix the reference.');
    const hash = abs.indexOf('#');
    const doc = hash < 0 ? abs : abs.slice(0, hash);
    let frag = '';
    try {
      frag = hash < 0 ? '' : decodeURIComponent(abs.slice(hash + 1));
    } catch {
      throw new InvalidSchemaError(fromInfo.path, `$ref ${JSON.stringify(ref)} has a malformed %-escape`, 'Fix the reference (escape % as %25).');
    }
    let target: unknown;
    if (frag === '' || frag.startsWith('/')) {
      const res = this.resource(doc);
      if (res === undefined) {
        throw new InvalidSchemaError(fromInfo.path, `$ref ${JSON.stringify(ref)} names ${doc}, which is neither in the schema nor in options.remotes`, 'Add the referenced document to options.remotes, or inline it under $defs.');
      }
      target = res;
      if (frag !== '') {
        for (const raw of frag.slice(1).split('/')) {
          const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
          if (target === null || typeof target !== 'object' || !(key in (target as object))) {
            throw new InvalidSchemaError(fromInfo.path, `$ref ${JSON.stringify(ref)} points to nothing (no ${JSON.stringify(key)})`, 'Fix the JSON pointer.');
          }
          target = (target as Record<string, unknown>)[key];
        }
      }
    } else {
      this.resource(doc);
      target = this.anchors.get(`${doc}#${frag}`);
      if (target === undefined) throw new InvalidSchemaError(fromInfo.path, `$ref ${JSON.stringify(ref)}: no anchor ${JSON.stringify(frag)} in ${doc}`, 'Fix the reference or add the $anchor.');
    }
    if (typeof target === 'boolean') return { schema: target, info: null };
    if (target === null || typeof target !== 'object' || Array.isArray(target)) {
      throw new InvalidSchemaError(fromInfo.path, `$ref ${JSON.stringify(ref)} does not point to a schema`, 'Point it at an object or boolean schema.');
    }
    if (!this.info.has(target)) this.index(target, doc, `${doc}#${frag}`, fromInfo.draft, true);
    return { schema: target as Record<string, unknown>, info: this.info.get(target) ?? null };
  }

  private resource(doc: string): unknown {
    let r = this.resources.get(doc);
    if (r === undefined && doc in this.remotes && !this.loaded.has(doc)) {
      this.loaded.add(doc);
      const remote = this.remotes[doc];
      if (remote !== null && typeof remote === 'object') {
        this.index(remote, doc, `${doc}#`, draftOf(remote, 2020), true);
        if (!this.resources.has(doc)) this.resources.set(doc, remote);
      } else if (typeof remote === 'boolean') this.resources.set(doc, remote);
      r = this.resources.get(doc);
    }
    return r;
  }
}

export function escapePointer(k: string): string {
  return k.replace(/~/g, '~0').replace(/\//g, '~1');
}
