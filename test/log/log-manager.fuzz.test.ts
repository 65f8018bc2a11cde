/**
 * Many partitions behind one small file-handle cache: random appends, reads, delete-records, retention
 * sweeps, clean restarts and crashes over 12 partitions sharing a budget of 8 descriptors, checked after every
 * step against an in-memory model, and against /proc: the process never holds more descriptors under the
 * log directory than the budget, and every acknowledged record is read back exactly.
 */
import fs from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FileCache, MIN_OPEN_FILES } from '../../src/log/segments/file-cache.js';
import { LogManager } from '../../src/log/segments/log-manager.js';
import { tmpDir } from '../helpers/tmp.js';
import { logConfig, logOptions, readAll, rec } from './log-fixtures.js';

const PARTITIONS = 12;
const config = logConfig({ segmentBytes: 300, flushPolicy: 'always' });
const layout = [{ name: 't', partitions: PARTITIONS, config }];

/** Descriptors this process holds on files under `dir`. */
function openUnder(dir: string): number {
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`).startsWith(dir)) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

const opSpec = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('append' as const), partition: fc.nat({ max: PARTITIONS - 1 }), records: fc.integer({ min: 1, max: 4 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('read' as const), partition: fc.nat({ max: PARTITIONS - 1 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deleteBefore' as const), partition: fc.nat({ max: PARTITIONS - 1 }), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('sweep' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const), clean: fc.boolean() }) },
);

describe('LogManager over many partitions and a small cache (fuzz)', () => {
  it('keeps every acknowledged record and never holds more descriptors than its budget', async () => {
    await fc.assert(fc.asyncProperty(fc.array(opSpec, { minLength: 10, maxLength: 60 }), async (ops) => {
      const dir = tmpDir();
      const files = new FileCache({ maxOpenFiles: MIN_OPEN_FILES });
      const open = () => {
        const m = new LogManager(dir, logOptions({ files }));
        m.start(layout);
        return m;
      };
      let m = new LogManager(dir, logOptions({ files }));
      m.createTopicLogs('t', PARTITIONS);
      m.addTopic('t', PARTITIONS, config, true);
      const model = Array.from({ length: PARTITIONS }, () => ({ values: [] as string[], logStart: 0 }));
      let n = 0;
      try {
        for (const op of ops) {
          switch (op.kind) {
            case 'append': {
              const values = Array.from({ length: op.records }, () => `v${n++}`);
              const { baseOffset } = await m.get('t', op.partition).append(values.map((v) => rec(v)));
              expect(baseOffset).toBe(model[op.partition]!.values.length);
              model[op.partition]!.values.push(...values);
              break;
            }
            case 'read': {
              const p = model[op.partition]!;
              expect(readAll(m.get('t', op.partition)).map((r) => r.value!.toString())).toEqual(p.values.slice(p.logStart));
              break;
            }
            case 'deleteBefore': {
              const p = model[op.partition]!;
              const to = p.logStart + (op.at % (p.values.length - p.logStart + 1));
              m.get('t', op.partition).deleteRecordsBefore(to, 'delete-records');
              p.logStart = Math.max(p.logStart, to);
              break;
            }
            case 'sweep':
              await m.visit('t', (log) => log.enforceRetention(), (_, err) => {
                throw err;
              });
              break;
            case 'restart':
              if (op.clean) await m.close();
              else files.closeAll(); // a crash: nothing closed, nothing sealed
              m = open();
          }
          expect(openUnder(dir)).toBeLessThanOrEqual(MIN_OPEN_FILES);
          expect(files.stats().open).toBeLessThanOrEqual(MIN_OPEN_FILES);
        }
        m.partitions('t').forEach((log, i) => {
          const p = model[i]!;
          expect([log.logStartOffset, log.highWatermark]).toEqual([p.logStart, p.values.length]);
          expect(readAll(log).map((r) => r.value!.toString())).toEqual(p.values.slice(p.logStart));
        });
      } finally {
        await m.close();
      }
    }), { numRuns: 40 });
  });
});
