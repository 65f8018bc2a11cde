/**
 * The Kafka codec: every served message round-trips at every version (values drawn from its definition,
 * property-based), known bytes decode as Kafka's clients write them, and random bytes never do worse than a
 * clean INVALID_REQUEST.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteReader, ByteWriter } from '../../src/kafka/codec/bytes.js';
import { readRequestHeader } from '../../src/kafka/codec/headers.js';
import { decode, encode } from '../../src/kafka/codec/interpreter.js';
import type { Struct } from '../../src/kafka/codec/interpreter.js';
import { inRange } from '../../src/kafka/codec/schema.js';
import type { Field, FieldType, MessageDefinition } from '../../src/kafka/codec/schema.js';
import { KAFKA_APIS } from '../../src/kafka/listener.js';
import { consumerProtocolAssignment, consumerProtocolSubscription } from '../../src/kafka/messages/groups.js';
import { OnelogError } from '../../src/protocol/errors.js';

const MESSAGES = [...KAFKA_APIS.flatMap((a) => [a.request, a.response]), consumerProtocolSubscription, consumerProtocolAssignment];

/** The versions of a definition's range. */
function versionsOf(def: MessageDefinition): number[] {
  const [lo, hi = lo] = def.versions.split('-').map(Number) as [number, number?];
  return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
}

/** Values a field may carry at `version`, as the wire can tell them apart. */
function arbitraryOf(type: FieldType, version: number, nullable: boolean): fc.Arbitrary<unknown> {
  const orNull = (a: fc.Arbitrary<unknown>) => (nullable ? fc.option(a, { nil: null }) : a);
  if (typeof type === 'object') {
    if ('array' in type) return orNull(fc.array(arbitraryOf(type.array, version, false), { maxLength: 3 }));
    return orNull(structOf(type.struct, version));
  }
  switch (type) {
    case 'bool': return fc.boolean();
    case 'int8': return fc.integer({ min: -128, max: 127 });
    case 'int16': return fc.integer({ min: -32768, max: 32767 });
    case 'uint16': return fc.integer({ min: 0, max: 65535 });
    case 'int32': return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    case 'int64': return fc.maxSafeInteger();
    case 'float64': return fc.double({ noNaN: true });
    case 'uuid': return fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => Buffer.from(b).toString('hex'));
    case 'string': return orNull(fc.string({ maxLength: 20 }));
    case 'bytes': return orNull(fc.uint8Array({ maxLength: 20 }).map((b) => Buffer.from(b)));
    case 'records': return fc.option(fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b)), { nil: null });
  }
}

function structOf(fields: readonly Field[], version: number): fc.Arbitrary<Struct> {
  const present = fields.filter((f) => inRange(f.versions, version));
  return fc.record(Object.fromEntries(present.map((f) => [f.name, arbitraryOf(f.type, version, inRange(f.nullable, version))])));
}

describe('kafka codec', () => {
  for (const def of MESSAGES) {
    it(`${def.name} round-trips at every version`, () => {
      for (const version of versionsOf(def)) {
        fc.assert(fc.property(structOf(def.fields, version), (value) => {
          const bytes = encode(def, version, value).finish();
          const r = new ByteReader(Buffer.from(bytes));
          const back = decode(def, version, r);
          expect(r.remaining).toBe(0);
          // What the version carries comes back; what it lacks reads as its default.
          expect(back, `${def.name} v${version}`).toMatchObject(value);
        }), { numRuns: 50 });
      }
    });
  }

  it('decodes a request kafkajs sends: Metadata v6 for one topic, with its header', () => {
    // size-less frame: api key 3, version 6, correlation id 7, client id "kafkajs", topics ["edits"], allowAutoTopicCreation true
    const frame = Buffer.from('0003' + '0006' + '00000007' + '0007' + Buffer.from('kafkajs').toString('hex') +
      '00000001' + '0005' + Buffer.from('edits').toString('hex') + '01', 'hex');
    const r = new ByteReader(frame);
    expect(readRequestHeader(r)).toEqual({ apiKey: 3, apiVersion: 6, correlationId: 7, clientId: 'kafkajs' });
    const metadata = KAFKA_APIS.find((a) => a.key === 3)!;
    expect(decode(metadata.request, 6, r)).toEqual({
      topics: [{ name: 'edits', topicId: '0'.repeat(32) }], allowAutoTopicCreation: true, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false,
    });
  });

  it('writes ApiVersions v3 with compact arrays and an empty tag section, as librdkafka reads it', () => {
    const apiVersions = KAFKA_APIS.find((a) => a.key === 18)!;
    const bytes = encode(apiVersions.response, 3, { errorCode: 0, apiKeys: [{ apiKey: 18, minVersion: 0, maxVersion: 3 }], throttleTimeMs: 0 }).finish();
    // error 0, 1 key (compact: 2), key 18 0..3 with no tags, throttle 0, no tags
    expect(bytes.toString('hex')).toBe('0000' + '02' + '0012' + '0000' + '0003' + '00' + '00000000' + '00');
  });

  it('never throws anything but INVALID_REQUEST on random bytes', () => {
    fc.assert(fc.property(fc.constantFrom(...MESSAGES), fc.nat(20), fc.uint8Array({ maxLength: 200 }), (def, v, bytes) => {
      const versions = versionsOf(def);
      const version = versions[v % versions.length]!;
      try {
        decode(def, version, new ByteReader(Buffer.from(bytes)));
      } catch (err) {
        expect(err).toBeInstanceOf(OnelogError);
        expect((err as OnelogError).code).toBe('INVALID_REQUEST');
      }
    }), { numRuns: 2000 });
  });

  it('writes varints as Kafka does', () => {
    for (const [n, hex] of [[0, '00'], [1, '01'], [127, '7f'], [128, '8001'], [300, 'ac02'], [2 ** 31 - 1, 'ffffffff07']] as const) {
      const w = new ByteWriter();
      w.uvarint(n);
      expect(w.finish().toString('hex')).toBe(hex);
      expect(new ByteReader(Buffer.from(hex, 'hex')).uvarint()).toBe(n);
    }
  });

  it('writes record batches as the slices given, not copies, and decodes them back', () => {
    const fetch = KAFKA_APIS.find((a) => a.key === 1)!;
    const batches = [Buffer.alloc(4096, 1), Buffer.alloc(2048, 2)];
    const value = {
      throttleTimeMs: 0, errorCode: 0, sessionId: 0,
      responses: [{ topic: 't', partitions: batches.map((records, partitionIndex) => ({ partitionIndex, errorCode: 0, highWatermark: 9, records })) }],
    };
    for (const version of [11, 12]) {
      const w = encode(fetch.response, version, value);
      const parts = w.parts();
      for (const b of batches) expect(parts).toContain(b); // the same Buffer, not a copy
      expect(parts.reduce((n, p) => n + p.length, 0)).toBe(w.length);
      const back = decode(fetch.response, version, new ByteReader(Buffer.concat(parts))) as { responses: Array<{ partitions: Array<{ records: Buffer }> }> };
      expect(back.responses[0]!.partitions.map((p) => p.records)).toEqual(batches);
    }
  });
});
