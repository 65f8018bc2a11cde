/**
 * How a Kafka protocol message is described, once, as data (docs/kafka.md): its fields with their types and
 * the versions each exists in, which versions are flexible (compact strings, arrays and bytes, tagged fields),
 * which fields are nullable or tagged in which versions. The interpreter (interpreter.ts) encodes and decodes
 * every version from these definitions. The definitions in messages/ are written from Apache Kafka's published
 * field lists (its message definitions and the protocol guide).
 */

/** A range of versions: `0+`, `3-7`, `5` or `none`. */
export type VersionRange = string;

export type PrimitiveType =
  | 'bool' | 'int8' | 'int16' | 'uint16' | 'int32' | 'int64' | 'float64' | 'uuid'
  | 'string' | 'bytes'
  /** Record batches: bytes (compact in flexible versions), as a Buffer slice, never decoded here. */
  | 'records';

/** A field's type: a primitive, an array of a type, or a structure of fields. */
export type FieldType = PrimitiveType | { array: FieldType } | { struct: readonly Field[] };

export interface Field {
  /** The property name in decoded values (camelCase of Kafka's field name). */
  name: string;
  type: FieldType;
  /** Versions the field exists in. */
  versions: VersionRange;
  /** Versions in which it may be null (strings, bytes, records, arrays, structs). @default none */
  nullable?: VersionRange;
  /** Its tag, for a tagged field (flexible versions only). */
  tag?: number;
  /** Versions in which it is tagged. @default none */
  tagged?: VersionRange;
  /** The value written when the value has none, and read for versions it does not exist in. @default zero, '', [], false or null */
  default?: unknown;
}

/** A request or response body, or a structure carried inside one (e.g. ConsumerProtocolSubscription). */
export interface MessageDefinition {
  name: string;
  /** Versions that may be encoded and decoded. */
  versions: VersionRange;
  /** Versions using the compact encodings and tagged fields. */
  flexible: VersionRange;
  fields: readonly Field[];
}

/** Whether `version` lies in `range`. */
export function inRange(range: VersionRange | undefined, version: number): boolean {
  if (range === undefined || range === 'none') return false;
  if (range.endsWith('+')) return version >= Number(range.slice(0, -1));
  const dash = range.indexOf('-');
  if (dash < 0) return version === Number(range);
  return version >= Number(range.slice(0, dash)) && version <= Number(range.slice(dash + 1));
}

/** Shorthand for a field: `field('throttleTimeMs', 'int32', '1+')`. */
export function field(name: string, type: FieldType, versions: VersionRange, extra: Omit<Field, 'name' | 'type' | 'versions'> = {}): Field {
  return { name, type, versions, ...extra };
}

/** Shorthand for an array of structures. */
export function structs(name: string, versions: VersionRange, fields: readonly Field[], extra: Omit<Field, 'name' | 'type' | 'versions'> = {}): Field {
  return { name, type: { array: { struct: fields } }, versions, ...extra };
}
