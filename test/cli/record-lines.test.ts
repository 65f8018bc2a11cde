/**
 * `onelog consume`'s output lines, written byte by byte (src/cli/record-lines.ts), against `JSON.stringify` of the
 * record's object: the same text for any key, value, headers and position, ASCII or not, valid UTF-8 or not.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ConsumedMessage } from '../../src/member/consumer.js';
import { RecordLines } from '../../src/cli/record-lines.js';
import { headersToJson } from '../../src/protocol/json-records.js';

/** The line as JSON.stringify writes it: the format the CLI always printed. */
function expected(m: ConsumedMessage): string {
  return `${JSON.stringify({
    topic: m.topic, partition: m.partition, offset: m.offset, timestamp: m.timestamp, key: m.key?.toString('utf8') ?? null,
    value: m.value?.toString('utf8') ?? null, headers: headersToJson(m.headers, 'utf8'), attempt: m.attempt, original: m.original,
  })}\n`;
}

/** What `lines` writes for `messages`, one push each, then a flush. */
async function written(messages: ConsumedMessage[]): Promise<string> {
  const chunks: Buffer[] = [];
  const lines = new RecordLines(async (bytes) => void chunks.push(Buffer.from(bytes)));
  for (const m of messages) await lines.push(m);
  await lines.flush();
  return Buffer.concat(chunks).toString('utf8');
}

const bytes = fc.oneof(
  fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
  fc.string({ unit: 'binary', maxLength: 32 }).map((s) => Buffer.from(s, 'utf8')),
  fc.string({ maxLength: 32 }).map((s) => Buffer.from(s, 'latin1')),
);
const message = fc.record({
  topic: fc.stringMatching(/^[a-zA-Z0-9._-]{1,20}$/),
  partition: fc.nat(1000),
  offset: fc.nat(),
  timestamp: fc.integer({ min: 0, max: 8.64e15 }),
  key: fc.option(bytes, { nil: null }),
  value: fc.option(bytes, { nil: null }),
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 8 }), value: fc.option(bytes, { nil: null }) }), { maxLength: 3 }),
  attempt: fc.integer({ min: 1, max: 100 }),
}).chain((m) => fc.record({
  topic: fc.constant(m.topic), partition: fc.constant(m.partition), offset: fc.constant(m.offset), timestamp: fc.constant(m.timestamp),
  key: fc.constant(m.key), value: fc.constant(m.value), headers: fc.constant(m.headers), attempt: fc.constant(m.attempt),
  original: fc.oneof(
    fc.constant({ topic: m.topic, partition: m.partition, offset: m.offset, timestamp: m.timestamp }),
    fc.record({ topic: fc.string({ maxLength: 12 }), partition: fc.nat(100), offset: fc.nat(), timestamp: fc.nat() }),
  ),
}));

describe('consume output lines', () => {
  it('are byte for byte what JSON.stringify of the record\'s object writes', async () => {
    await fc.assert(fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 20 }), async (messages) => {
      expect(await written(messages)).toBe(messages.map(expected).join(''));
    }), { numRuns: 300 });
  });

  it('writes a line longer than its buffer whole and in order', async () => {
    const base = { topic: 'edits', partition: 0, timestamp: 1442016000000, key: null, headers: [], attempt: 1 };
    const messages: ConsumedMessage[] = [0, 1, 2].map((offset) => ({
      ...base, offset, value: Buffer.alloc(offset === 1 ? 3 << 20 : 100, 'x\n'), original: { topic: 'edits', partition: 0, offset, timestamp: base.timestamp },
    }));
    const writes: number[] = [];
    const chunks: Buffer[] = [];
    const lines = new RecordLines(async (b) => {
      writes.push(b.length);
      chunks.push(Buffer.from(b));
    });
    for (const m of messages) await lines.push(m);
    await lines.flush();
    expect(Buffer.concat(chunks).toString('utf8')).toBe(messages.map(expected).join(''));
    // The first line is written once the long one does not fit beside it; the long one gets a buffer of its size,
    // which the third line shares.
    const sizes = messages.map((m) => Buffer.byteLength(expected(m)));
    expect(writes).toEqual([sizes[0], sizes[1]! + sizes[2]!]);
  });
});
