/**
 * Encodes and decodes any version of a message from its definition (schema.ts): fields absent from a version are
 * skipped on the wire and read as their default; flexible versions use compact lengths (unsigned varint of
 * length + 1, 0 for null) and end every structure with its tagged fields, written in tag order, unknown ones
 * skipped when read. Values are plain objects keyed by field name; `records` fields are Buffer slices of the
 * request, never copied or decoded. An interpreter rather than generated code: one walk per message, measured
 * in bench (docs/kafka.md).
 */
import { OnelogError } from '../../protocol/errors.js';
import { ByteReader, ByteWriter } from './bytes.js';
import { inRange } from './schema.js';
import type { Field, FieldType, MessageDefinition } from './schema.js';

/** A decoded message or structure. */
export type Struct = Record<string, unknown>;

/** Encodes `value` as version `version` of `def`, into `w` (or a new writer). */
export function encode(def: MessageDefinition, version: number, value: Struct, w = new ByteWriter()): ByteWriter {
  checkVersion(def, version);
  writeStruct(w, def.fields, version, inRange(def.flexible, version), value);
  return w;
}

/** Decodes version `version` of `def` from `r`. @throws OnelogError `INVALID_REQUEST` for malformed bytes */
export function decode(def: MessageDefinition, version: number, r: ByteReader): Struct {
  checkVersion(def, version);
  return readStruct(r, def.fields, version, inRange(def.flexible, version));
}

function checkVersion(def: MessageDefinition, version: number): void {
  if (!inRange(def.versions, version)) {
    throw new OnelogError('INTERNAL_ERROR', `${def.name} has no version ${version} (versions ${def.versions})`);
  }
}

/** The value of a field a version lacks, or that a value leaves out. */
export function defaultOf(f: Field, version: number): unknown {
  if (f.default !== undefined) return f.default;
  if (inRange(f.nullable, version)) return null;
  return zeroOf(f.type);
}

function zeroOf(type: FieldType): unknown {
  if (typeof type === 'object') return 'array' in type ? [] : {};
  switch (type) {
    case 'bool': return false;
    case 'string': return '';
    case 'uuid': return '0'.repeat(32);
    case 'bytes':
    case 'records': return Buffer.alloc(0);
    default: return 0;
  }
}

function writeStruct(w: ByteWriter, fields: readonly Field[], version: number, flexible: boolean, value: Struct): void {
  const tagged: Array<{ f: Field; v: unknown }> = [];
  for (const f of fields) {
    if (!inRange(f.versions, version)) continue;
    const given = value[f.name];
    if (flexible && inRange(f.tagged, version)) {
      if (given !== undefined && given !== null) tagged.push({ f, v: given });
      continue;
    }
    writeValue(w, f.type, version, flexible, inRange(f.nullable, version), given === undefined ? defaultOf(f, version) : given);
  }
  if (!flexible) return;
  tagged.sort((a, b) => a.f.tag! - b.f.tag!);
  w.uvarint(tagged.length);
  for (const { f, v } of tagged) {
    const inner = new ByteWriter(64);
    writeValue(inner, f.type, version, true, inRange(f.nullable, version), v);
    const bytes = inner.finish();
    w.uvarint(f.tag!);
    w.uvarint(bytes.length);
    w.bytes(bytes);
  }
}

function writeLength(w: ByteWriter, flexible: boolean, length: number | null, classic: 'int16' | 'int32'): void {
  if (flexible) w.uvarint(length === null ? 0 : length + 1);
  else if (classic === 'int16') w.int16(length ?? -1);
  else w.int32(length ?? -1);
}

function writeValue(w: ByteWriter, type: FieldType, version: number, flexible: boolean, nullable: boolean, v: unknown): void {
  if (typeof type === 'object') {
    if ('array' in type) {
      const items = v === null && nullable ? null : (v as unknown[] | null) ?? [];
      writeLength(w, flexible, items === null ? null : items.length, 'int32');
      for (const item of items ?? []) writeValue(w, type.array, version, flexible, false, item);
      return;
    }
    if (nullable) {
      w.int8(v === null ? -1 : 1);
      if (v === null) return;
    }
    writeStruct(w, type.struct, version, flexible, (v ?? {}) as Struct);
    return;
  }
  switch (type) {
    case 'bool': return w.bool(Boolean(v));
    case 'int8': return w.int8(v as number);
    case 'int16': return w.int16(v as number);
    case 'uint16': return w.uint16(v as number);
    case 'int32': return w.int32(v as number);
    case 'int64': return w.int64(v as number);
    case 'float64': return w.float64(v as number);
    case 'uuid': return w.uuid(v as string);
    case 'string': {
      if (v === null && nullable) return writeLength(w, flexible, null, 'int16');
      const bytes = Buffer.from((v as string | null) ?? '', 'utf8');
      writeLength(w, flexible, bytes.length, 'int16');
      return w.bytes(bytes);
    }
    case 'bytes':
    case 'records': {
      if (v === null && (nullable || type === 'records')) return writeLength(w, flexible, null, 'int32');
      const bytes = (v as Buffer | null) ?? Buffer.alloc(0);
      writeLength(w, flexible, bytes.length, 'int32');
      return w.bytes(bytes);
    }
  }
}

function readStruct(r: ByteReader, fields: readonly Field[], version: number, flexible: boolean): Struct {
  const out: Struct = {};
  const byTag = new Map<number, Field>();
  for (const f of fields) {
    if (!inRange(f.versions, version)) {
      out[f.name] = defaultOf(f, version);
      continue;
    }
    if (flexible && inRange(f.tagged, version)) {
      out[f.name] = defaultOf(f, version);
      byTag.set(f.tag!, f);
      continue;
    }
    out[f.name] = readValue(r, f.type, version, flexible, inRange(f.nullable, version));
  }
  if (flexible) {
    for (let n = r.uvarint(); n > 0; n--) {
      const tag = r.uvarint();
      const size = r.uvarint();
      const f = byTag.get(tag);
      if (f === undefined) {
        r.bytes(size); // a tag this version does not know: skipped
        continue;
      }
      const inner = new ByteReader(r.bytes(size));
      out[f.name] = readValue(inner, f.type, version, true, inRange(f.nullable, version));
    }
  }
  return out;
}

function readLength(r: ByteReader, flexible: boolean, classic: 'int16' | 'int32'): number | null {
  const n = flexible ? r.uvarint() - 1 : classic === 'int16' ? r.int16() : r.int32();
  if (n < -1) throw new OnelogError('INVALID_REQUEST', `malformed Kafka message: length ${n} at byte ${r.pos}`);
  return n === -1 ? null : n;
}

function readValue(r: ByteReader, type: FieldType, version: number, flexible: boolean, nullable: boolean): unknown {
  if (typeof type === 'object') {
    if ('array' in type) {
      const n = readLength(r, flexible, 'int32');
      if (n === null) return nullable ? null : [];
      // Each element takes at least a byte: a count beyond what is left is malformed, not an allocation.
      if (n > r.remaining) throw new OnelogError('INVALID_REQUEST', `malformed Kafka message: ${n} array elements in ${r.remaining} bytes`);
      const items = new Array<unknown>(n);
      for (let i = 0; i < n; i++) items[i] = readValue(r, type.array, version, flexible, false);
      return items;
    }
    if (nullable && r.int8() < 0) return null;
    return readStruct(r, type.struct, version, flexible);
  }
  switch (type) {
    case 'bool': return r.bool();
    case 'int8': return r.int8();
    case 'int16': return r.int16();
    case 'uint16': return r.uint16();
    case 'int32': return r.int32();
    case 'int64': return r.int64();
    case 'float64': return r.float64();
    case 'uuid': return r.uuid();
    case 'string': {
      const n = readLength(r, flexible, 'int16');
      return n === null ? (nullable ? null : '') : r.bytes(n).toString('utf8');
    }
    case 'bytes':
    case 'records': {
      const n = readLength(r, flexible, 'int32');
      return n === null ? null : r.bytes(n);
    }
  }
}
