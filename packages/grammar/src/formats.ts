// String formats as regular languages, written to accept a subset of what ajv-formats ("full" mode) accepts, so
// that every generated string passes ajv. Dates check days per month and leap years; times check ranges and
// require a zone (RFC 3339). Formats ajv-formats does not know are annotations (ignored); known ones we cannot
// express are reported by the schema compiler.

import { LengthMachine, type CharMachine } from './machine.ts';
import { regexMachine } from './regex.ts';

const LEAP = String.raw`(?:\d\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)`;
const DATE = String.raw`(?:\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|02-(?:0[1-9]|1\d|2[0-8]))|${LEAP}-02-29)`;
const HMS = String.raw`(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?`;
const ZONE = String.raw`(?:[zZ]|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?)`;
const TIME = `${HMS}${ZONE}`;
const ISO_TIME = `${HMS}${ZONE}?`;
const IPV4_OCTET = String.raw`(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`;
const IPV4 = String.raw`(?:${IPV4_OCTET}\.){3}${IPV4_OCTET}`;
const H16 = '[0-9a-f]{1,4}';
const TPART = String.raw`\d+H(?:\d+M)?(?:\d+S)?|\d+M(?:\d+S)?|\d+S`;

// ajv-formats' own expressions where they are already regular (copied from ajv-formats 3.0.1, full mode)
const IPV6 = String.raw`((([0-9a-f]{1,4}:){7}([0-9a-f]{1,4}|:))|(([0-9a-f]{1,4}:){6}(:[0-9a-f]{1,4}|((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){5}(((:[0-9a-f]{1,4}){1,2})|:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){4}(((:[0-9a-f]{1,4}){1,3})|((:[0-9a-f]{1,4})?:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){3}(((:[0-9a-f]{1,4}){1,4})|((:[0-9a-f]{1,4}){0,2}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){2}(((:[0-9a-f]{1,4}){1,5})|((:[0-9a-f]{1,4}){0,3}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){1}(((:[0-9a-f]{1,4}){1,6})|((:[0-9a-f]{1,4}){0,4}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(:(((:[0-9a-f]{1,4}){1,7})|((:[0-9a-f]{1,4}){0,5}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:)))`;
const URI = String.raw`(?:[a-z][a-z0-9+\-.]*:)(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)|(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)(?:\?(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?`;
const URI_REFERENCE = String.raw`(?:[a-z][a-z0-9+\-.]*:)?(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:\[(?:(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)|(?:[a-z0-9\-._~!$&'"()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})*)*|\/(?:(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'"()*+,;=:@]|%[0-9a-f]{2})*)*)?(?:\?(?:[a-z0-9\-._~!$&'"()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\-._~!$&'"()*+,;=:@/?]|%[0-9a-f]{2})*)?`;
const URI_TEMPLATE = String.raw`(?:(?:[^\x00-\x20"'<>%\\^\x60{|}]|%[0-9a-f]{2})|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?)*\})*`;
const EMAIL = String.raw`[a-z0-9!#$%&'*+/=?^_\x60{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_\x60{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?`;
const HOSTNAME = String.raw`[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?`;

interface FormatDef {
  pattern: string;
  ignoreCase: boolean;
  /** Extra length limit (for lookaheads such as hostname's total length). */
  maxLength?: number;
}

const STRING_FORMATS: Record<string, FormatDef> = {
  date: { pattern: DATE, ignoreCase: false },
  time: { pattern: TIME, ignoreCase: false },
  'date-time': { pattern: `${DATE}[tT]${TIME}`, ignoreCase: false },
  'iso-time': { pattern: ISO_TIME, ignoreCase: false },
  'iso-date-time': { pattern: `${DATE}[tT ]${ISO_TIME}`, ignoreCase: false },
  duration: { pattern: String.raw`P(?:(?:\d+Y(?:\d+M)?(?:\d+D)?|\d+M(?:\d+D)?|\d+D)(?:T(?:${TPART}))?|T(?:${TPART})|\d+W)`, ignoreCase: false },
  uri: { pattern: URI, ignoreCase: true },
  'uri-reference': { pattern: URI_REFERENCE, ignoreCase: true },
  'uri-template': { pattern: URI_TEMPLATE, ignoreCase: true },
  email: { pattern: EMAIL, ignoreCase: true },
  hostname: { pattern: HOSTNAME, ignoreCase: true, maxLength: 253 },
  ipv4: { pattern: IPV4, ignoreCase: false },
  ipv6: { pattern: IPV6, ignoreCase: true },
  uuid: { pattern: `(?:urn:uuid:)?${H16.replace('{1,4}', '{8}')}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}`, ignoreCase: true },
  'json-pointer': { pattern: String.raw`(?:\/(?:[^~/]|~0|~1)*)*`, ignoreCase: false },
  'json-pointer-uri-fragment': { pattern: String.raw`#(?:\/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*`, ignoreCase: true },
  'relative-json-pointer': { pattern: String.raw`(?:0|[1-9][0-9]*)(?:#|(?:\/(?:[^~/]|~0|~1)*)*)`, ignoreCase: false },
  byte: { pattern: String.raw`(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?`, ignoreCase: false },
};

/** Formats ajv-formats validates on strings that we do not express (reported, never ignored). */
const UNSUPPORTED_STRING_FORMATS = new Set(['regex', 'url']);

const cache = new Map<string, FormatDef>();
export type FormatKind = 'supported' | 'unsupported' | 'ignored';

export function stringFormatKind(name: string): FormatKind {
  if (name in STRING_FORMATS) return 'supported';
  if (UNSUPPORTED_STRING_FORMATS.has(name)) return 'unsupported';
  return 'ignored'; // unknown to ajv-formats (an annotation) or no effect on strings
}

/** Machines whose intersection is the format's language (fresh instances: machines carry per-use caches). */
export function formatMachines(name: string): CharMachine[] {
  const def = STRING_FORMATS[name];
  if (def === undefined) return [];
  cache.set(name, def);
  const ms: CharMachine[] = [regexMachine(def.pattern, { search: false, ignoreCase: def.ignoreCase })];
  if (def.maxLength !== undefined) ms.push(new LengthMachine(0, def.maxLength));
  return ms;
}

/** Number formats: bounds/integer constraints they imply (ajv-formats int32/int64). */
export function numberFormat(name: string): { integer: boolean; min?: number; max?: number } | null {
  if (name === 'int32') return { integer: true, min: -(2 ** 31), max: 2 ** 31 - 1 };
  if (name === 'int64') return { integer: true };
  return null;
}
