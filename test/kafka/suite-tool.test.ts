/**
 * bench/kafka-suite/run.ts reads its list and the runner's verdicts: a failure's first error is the runner's own
 * `### Test ... failed` line and the one after it, colours removed; a run with no summary is a failure, never a pass.
 */
import { describe, expect, it } from 'vitest';
import { readTestList, readVerdict } from '../../bench/kafka-suite/run.js';

const ESC = String.fromCharCode(27);

describe('the librdkafka suite tool', () => {
  it('reads its list: a family, or why a test does not apply', () => {
    expect(readTestList('# header\n0001 produce\n\n0103 n/a: transactions  # inline\n')).toEqual([
      { id: '0001', family: 'produce', notApplicable: null },
      { id: '0103', family: 'n/a', notApplicable: 'transactions' },
    ]);
    expect(() => readTestList('12 produce')).toThrow(/not a test line/);
  });

  it('reads the runner\'s verdict from its output', () => {
    expect(readVerdict(`${ESC}[32m= Test 0001 PASSED =${ESC}[0m\n============== ALL TESTS PASSED ==============\nmunmap_chunk(): invalid pointer`)).toEqual({ passed: true, firstError: null });
    const failed = readVerdict(`x\n${ESC}[31m### Test "0172 (sub:1)" failed at a.c:10:f() at now: ###\nTest assertion failed: "n > 0"\n### Test "0172" failed at b.c:1 ###\nother\nTEST FAILURE`);
    expect(failed).toEqual({ passed: false, firstError: 'Test "0172 (sub:1)" failed at a.c:10:f() at now:: Test assertion failed: "n > 0"' });
    expect(readVerdict('Running test 0012\n').passed).toBe(false);
  });
});
