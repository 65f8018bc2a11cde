/**
 * Records' bytes as JSON text (src/protocol/json-records.ts): base64 is checked before it is decoded (Node's decoder
 * skips what it cannot read, so bad input would be stored changed), in time linear in its length, whatever its size.
 */
import { describe, expect, it } from 'vitest';
import { jsonToBytes } from '../../src/protocol/json-records.js';

describe('jsonToBytes with base64', () => {
  it('takes canonical base64 of any size, and refuses text outside the alphabet or badly padded, naming the field', () => {
    const big = Buffer.alloc(6 * 1024 * 1024 + 1, 7); // 8 MiB of text ending '=='; one byte less: no padding
    for (const bytes of [big, big.subarray(1), Buffer.alloc(0), Buffer.from('onelog')]) {
      expect(jsonToBytes(bytes.toString('base64'), 'base64', 'value')!.equals(bytes)).toBe(true);
    }
    for (const bad of ['b25lbG9n!', 'b25lbG9', 'b25lb===', '=b25lbG9', 'b2=lbG9n', `${big.toString('base64')}?`]) {
      expect(() => jsonToBytes(bad, 'base64', 'value'), bad.slice(-12)).toThrow(expect.objectContaining({ code: 'INVALID_RECORD', message: 'value is not valid base64 (encoding base64)' }));
    }
  });
});
