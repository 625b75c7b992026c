// Streamed structure: partial-JSON events for UIs that render an object while it is generated.
//
// - PartialJsonParser: an incremental JSON parser (text split anywhere, O(n) total) that emits JsonEvents in
//   document order, with type-ahead (`announce`) for grammar-aware producers that know a key or type is forced.
// - jsonEvents: any text stream -> events (remote backends).
// - JsonAssembler / assembleJson: events -> the value, exactly as JSON.parse gives it.

export type { JsonEvent, JsonEventKind, JsonPath, JsonType, PartialJsonOptions, SnapshotMode } from './events.ts';
export { PartialJsonError, PartialJsonParser, formatJsonPath, parsePartialJson } from './parser.ts';
export { JsonAssembler, applyEvent, assembleJson } from './assembler.ts';
export { jsonEvents } from './stream.ts';
