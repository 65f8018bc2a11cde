import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CommitJournal } from '../../src/offsets/commit-journal.js';
import type { JournalRecord } from '../../src/offsets/commit-journal.js';
import { tmpDir } from '../helpers/tmp.js';

/** The journal files of `dir`, by name. */
const files = (dir: string) => fs.readdirSync(dir).filter((f) => f.startsWith('journal-')).sort();

/** Appends `records` to a journal begun at their first sequence number. */
function write(dir: string, records: readonly JournalRecord[], maxFileBytes?: number): CommitJournal {
  const journal = CommitJournal.read(dir).start(records[0]?.seq ?? 1, { maxFileBytes });
  for (const r of records) {
    for (const put of r.puts) journal.add(put.key, put.value);
    journal.append(r.seq);
  }
  return journal;
}

const put = (key: string, value: string) => ({ key: Buffer.from(key), value: Buffer.from(value) });

describe('CommitJournal', () => {
  it('reads back every record in sequence order across the files it rolled, and removes a closed file once all of it is applied', () => {
    const dir = tmpDir('onelog-journal-');
    const records = Array.from({ length: 40 }, (_, i) => ({ seq: i + 1, puts: [put(`g\u0000t\u0000${i}`, `v${i}`), put('k', 'x'.repeat(i))] }));
    const journal = write(dir, records, 200);
    const rolled = files(dir);
    expect(rolled.length).toBeGreaterThan(3);
    expect(rolled[0]).toBe('journal-0000000000000001');
    expect(CommitJournal.read(dir).records).toEqual(records);

    // A file goes once its last record is applied, not before; the open file stays.
    const firstLast = Math.max(...CommitJournal.read(dir).records.filter((r) => r.seq < Number(rolled[1]!.slice(8))).map((r) => r.seq));
    journal.applied(firstLast - 1);
    expect(files(dir)).toEqual(rolled);
    journal.applied(firstLast);
    expect(files(dir)).toEqual(rolled.slice(1));
    journal.applied(40);
    expect(files(dir)).toEqual(rolled.slice(-1));
    journal.close(true);
    expect(files(dir)).toEqual([]);
  });

  it('keeps its files at a close that is not clean, and start removes those it read', () => {
    const dir = tmpDir('onelog-journal-');
    write(dir, [{ seq: 7, puts: [put('a', 'b')] }]).close(false);
    const { records, start } = CommitJournal.read(dir);
    expect(records).toEqual([{ seq: 7, puts: [put('a', 'b')] }]);
    const next = start(8);
    expect(files(dir)).toEqual(['journal-0000000000000008']);
    next.close(true);
  });

  it('a record cut short or changed ends the replay of its file at the record before it', () => {
    fc.assert(fc.property(
      fc.array(fc.array(fc.tuple(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ maxLength: 60 })), { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 12 }),
      fc.nat(), fc.option(fc.nat()),
      (commits, cutAt, flipAt) => {
        const dir = tmpDir('onelog-journal-');
        const records = commits.map((puts, i) => ({ seq: i + 1, puts: puts.map(([k, v]) => ({ key: Buffer.from(k), value: Buffer.from(v) })) }));
        write(dir, records).close(false);
        const file = path.join(dir, files(dir)[0]!);
        const bytes = fs.readFileSync(file);
        // Where each record ends in the file.
        const ends: number[] = [];
        let at = 0;
        for (const r of records) ends.push(at += 16 + r.puts.reduce((n, p) => n + 6 + p.key.length + p.value.length, 0));
        const cut = cutAt % (bytes.length + 1);
        const damaged = Buffer.from(bytes.subarray(0, cut));
        const flip = flipAt === null || cut === 0 ? undefined : flipAt % cut;
        if (flip !== undefined) damaged[flip] = damaged[flip]! ^ 0x40;
        fs.writeFileSync(file, damaged);
        // Whole records before the cut and before the changed byte are read; none after.
        const intact = ends.filter((end) => end <= cut && (flip === undefined || end <= flip)).length;
        expect(CommitJournal.read(dir).records).toEqual(records.slice(0, intact));
      },
    ), { numRuns: 300 });
  });

  it('keeps values over 64 KiB (a long commit metadata), and refuses a key over 65,535 bytes before writing anything of the record', () => {
    const dir = tmpDir('onelog-journal-');
    const journal = write(dir, [{ seq: 1, puts: [put('a', '1')] }]);
    journal.add(Buffer.from('b'), Buffer.from('2'));
    expect(() => journal.add(Buffer.alloc(65_536), Buffer.from('3'))).toThrow(/over 65535/);
    journal.discard();
    const long = { key: Buffer.from('d'), value: Buffer.alloc(100_000, 'm') };
    journal.add(long.key, long.value);
    journal.append(2);
    journal.close(false);
    expect(CommitJournal.read(dir).records).toEqual([{ seq: 1, puts: [put('a', '1')] }, { seq: 2, puts: [long] }]);
  });
});
