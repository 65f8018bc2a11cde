/** Kafka request framing: frames split and joined across chunks however the bytes arrive. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FrameReader } from '../../src/kafka/frames.js';

function framed(payloads: Buffer[]): Buffer {
  return Buffer.concat(payloads.flatMap((p) => {
    const size = Buffer.alloc(4);
    size.writeInt32BE(p.length);
    return [size, p];
  }));
}

describe('FrameReader', () => {
  it('gives back every frame, in order, whatever the chunks', () => {
    fc.assert(fc.property(
      fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 20 }),
      fc.array(fc.integer({ min: 1, max: 97 }), { minLength: 1, maxLength: 20 }),
      (payloads, cuts) => {
        const bytes = framed(payloads.map((p) => Buffer.from(p)));
        const reader = new FrameReader(1 << 20);
        const out: Buffer[] = [];
        for (let at = 0, i = 0; at < bytes.length; i++) {
          const n = cuts[i % cuts.length]!;
          reader.push(bytes.subarray(at, at + n));
          at += n;
          for (let f = reader.next(); f !== null; f = reader.next()) out.push(Buffer.from(f));
        }
        expect(out).toEqual(payloads.map((p) => Buffer.from(p)));
        expect(reader.pending).toBe(0);
      },
    ));
  });

  it('slices a frame that arrived in one chunk, without copying it', () => {
    const bytes = framed([Buffer.from('a frame'), Buffer.from('another')]);
    const reader = new FrameReader(100);
    reader.push(bytes);
    expect(reader.next()!.buffer).toBe(bytes.buffer);
  });

  it('tells the size the next frame declares once its 4 bytes arrived, before its body (to refuse it unread)', () => {
    const reader = new FrameReader(1 << 20);
    reader.push(Buffer.from([0, 0]));
    expect(reader.nextSize()).toBeNull();
    reader.push(Buffer.from([0x10, 0, 1, 2]));
    expect([reader.nextSize(), reader.next(), reader.pending]).toEqual([0x1000, null, 6]);
  });

  it('refuses a size above the maximum or below zero before the frame arrives', () => {
    const big = new FrameReader(10);
    big.push(Buffer.from([0, 0, 0, 11]));
    expect(() => big.next()).toThrow(expect.objectContaining({ code: 'REQUEST_TOO_LARGE' }));
    const negative = new FrameReader(10);
    negative.push(Buffer.from([0xff, 0xff]));
    expect(negative.next()).toBeNull(); // the size is not complete yet
    negative.push(Buffer.from([0xff, 0xff]));
    expect(() => negative.next()).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST' }));
  });
});
