// Fuzzing safetensors headers as the product reads them: openHfFolder over stories260K's config.json and a
// model.safetensors whose JSON header is mutated — dtypes (unknown, empty, inherited names such as "toString"),
// shapes (negative, fractional, huge, too many dims, not numbers), data_offsets (reversed, overlapping, past the end,
// not a pair), tensors renamed, dropped and invented (names such as "__proto__"), __metadata__ of other types — or
// whose bytes are damaged (the header length lied about, bytes flipped, the JSON cut, invalid UTF-8). Every case must
// open or end in a typed IntabModelError, and none may hang.

import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { IntabModelError } from '../errors.ts';
import { openHfFolder } from '../load.ts';
import { bytesSource } from '../source.ts';
import type { ByteSource } from '../types.ts';
import { headerSource } from './test-header-source.ts';
import { checkTensorTable } from './test-model-checks.ts';
import { fuzz, fuzzTestTimeout, type Random } from '@intab/testing/fuzz';

const SHARED = process.env.INTAB_SHARED ? `${process.env.INTAB_SHARED.replace(/\/$/, '')}/` : fileURLToPath(new URL('../../../../../shared/', import.meta.url));
const HANG_MS = 5_000;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const DTYPES = ['F32', 'F16', 'BF16', 'I8', 'U8', 'I64', 'F64', 'F8_E4M3', 'BOOL', 'Q4', '', 'f32', 'toString', '__proto__', 'constructor', 'hasOwnProperty'];
const NAMES = ['model.embed_tokens.weight', 'lm_head.weight', 'model.norm.weight', 'model.layers.0.self_attn.q_proj.weight', 'model.layers.9.mlp.up_proj.weight', '__proto__', 'constructor', '', '__metadata__', 'x'.repeat(2000), '😀'];
const NUMBERS: Json[] = [0, 1, -1, 64, 512, 1.5, 2 ** 53, 2 ** 53 + 2, 1e308, -0, '64', null, [], {}];

function junk(r: Random): Json {
  switch (r.int(7)) {
    case 0: return r.pick(NUMBERS);
    case 1: return r.pick(DTYPES);
    case 2: return null;
    case 3: return [r.pick(NUMBERS), r.pick(NUMBERS)];
    case 4: return { dtype: r.pick(DTYPES), shape: [r.pick(NUMBERS)], data_offsets: [0, r.pick(NUMBERS)] };
    case 5: return r.chance(0.5);
    default: return Array.from({ length: r.int(10) }, () => r.int(100));
  }
}

/** The header with 1-3 structural edits. */
function mutateHeader(r: Random, base: Record<string, Json>, dataBytes: number): Record<string, Json> {
  const h = structuredClone(base);
  for (let m = 1 + r.int(3); m > 0; m--) {
    const names = Object.keys(h).filter((k) => k !== '__metadata__');
    const name = names.length ? r.pick(names) : undefined;
    const t = name !== undefined ? (h[name] as Record<string, Json>) : undefined;
    const isObj = t !== null && typeof t === 'object' && !Array.isArray(t);
    switch (r.int(11)) {
      case 0: if (isObj) t.dtype = r.pick(DTYPES); break;
      case 1: if (isObj && Array.isArray(t.shape) && t.shape.length) t.shape[r.int(t.shape.length)] = r.pick(NUMBERS); break;
      case 2: if (isObj) t.shape = r.chance(0.5) ? Array.from({ length: 9 }, () => 1) : junk(r); break;
      case 3: {
        if (!isObj || !Array.isArray(t.data_offsets)) break;
        const [b, e] = t.data_offsets as number[];
        t.data_offsets = r.pick<Json>([[e!, b!], [b!, e! + 4], [b! - 4, e!], [dataBytes, dataBytes + 4], [0, dataBytes + 1], [b!], [b!, e!, 0], [b! + 0.5, e!], 'x']);
        break;
      }
      case 4: if (name !== undefined) delete h[name]; break;
      case 5: h[r.pick(NAMES)] = r.chance(0.5) && t ? structuredClone(t) : junk(r); break;
      case 6: if (name !== undefined && t !== undefined) { delete h[name]; h[r.pick(NAMES)] = t; } break;
      case 7: h.__metadata__ = r.pick<Json>([{ format: 'pt' }, { format: 1 }, [], 'pt', null, { a: { b: 'c' } }]); break;
      case 8: if (isObj) delete t[r.pick(['dtype', 'shape', 'data_offsets'])]; break;
      case 9: if (name !== undefined) h[name] = junk(r); break;
      default: if (isObj) t[r.pick(['extra', '__proto__', 'dtype'])] = junk(r); break;
    }
  }
  return h;
}

interface Case {
  header: Uint8Array;
  /** Bytes of data after the header (claimed: reads return zeros). */
  dataBytes: number;
  label: string;
}

function damage(r: Random, json: Uint8Array, dataBytes: number): Case {
  let body = json;
  let length = BigInt(json.length);
  let label = 'header';
  switch (r.int(5)) {
    case 0: length = r.pick([0n, 1n, BigInt(json.length) - 1n, BigInt(json.length) + 1n, BigInt(json.length + dataBytes), 2n ** 63n, 2n ** 64n - 1n]); label = `length ${length}`; break;
    case 1: body = json.slice(0, r.int(json.length)); length = BigInt(body.length); label = 'cut'; break;
    case 2: body = json.slice(); for (let k = 1 + r.int(4); k > 0; k--) body[r.int(body.length)] = r.int(256); label = 'flipped'; break;
    case 3: body = json.slice(); body[r.int(body.length)] = r.pick([0x80, 0xc0, 0xff, 0x00]); label = 'utf-8'; break;
    default: {
      // a key twice (JSON.parse keeps the last)
      const text = new TextDecoder().decode(json);
      const m = /"model\.[^"]+":\{[^}]*\}/.exec(text);
      body = new TextEncoder().encode(m ? text.replace('{', `{${m[0]},`) : text);
      length = BigInt(body.length);
      label = 'duplicate key';
    }
  }
  const header = new Uint8Array(8 + body.length);
  new DataView(header.buffer).setBigUint64(0, BigInt.asUintN(64, length), true);
  header.set(body, 8);
  return { header, dataBytes, label };
}

test('fuzz: safetensors headers open or end in a typed IntabModelError, none hangs', async () => {
  const file = new Uint8Array(await readFile(`${SHARED}models/stories260K/hf/model.safetensors`));
  const headerLen = Number(new DataView(file.buffer, file.byteOffset).getBigUint64(0, true));
  const base = JSON.parse(new TextDecoder().decode(file.subarray(8, 8 + headerLen))) as Record<string, Json>;
  const dataBytes = file.length - 8 - headerLen;
  const config = bytesSource('config.json', new Uint8Array(await readFile(`${SHARED}models/stories260K/hf/config.json`)));
  const enc = new TextEncoder();
  const report = await fuzz<Case>({
    name: 'safetensors-header',
    seed: 0x5eed12,
    generate: (r) => {
      const json = enc.encode(JSON.stringify(mutateHeader(r, base, dataBytes)));
      if (r.chance(0.25)) return damage(r, json, dataBytes);
      const header = new Uint8Array(8 + json.length);
      new DataView(header.buffer).setBigUint64(0, BigInt(json.length), true);
      header.set(json, 8);
      return { header, dataBytes, label: 'mutated' };
    },
    run: async ({ header, dataBytes: n }) => {
      const files = new Map<string, ByteSource>([['config.json', config], ['model.safetensors', headerSource('model.safetensors', header, n)]]);
      const model = await openHfFolder(files);
      checkTensorTable(model.tensors.values(), (t) => t.source.size);
      return model.tensors.size > 0 ? 'opened' : 'opened (no weights)';
    },
    typed: (e) => e instanceof IntabModelError,
    show: ({ header, label }) => `${label}: ${new TextDecoder().decode(header.subarray(8, 600))}`,
  });
  expect(report.crashes).toEqual([]);
  expect(report.slowestMs, report.slowestCase).toBeLessThan(HANG_MS);
  expect(report.outcomes.opened ?? 0).toBeGreaterThan(report.cases / 20);
}, fuzzTestTimeout());
