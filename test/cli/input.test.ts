/** `onelog produce` input reading, on the real data files and small written ones. */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { CsvRowJson, formatOf, readRecords } from '../../src/cli/input.js';
import type { InputRecord, TextRecord } from '../../src/cli/input.js';
import { tmpDir } from '../helpers/tmp.js';
import { readEdits, WIKITICKER } from '../helpers/wikiticker.js';

const SP500 = path.resolve(import.meta.dirname, '../../examples/data/sp500-daily-2013-2018.csv.gz');

async function all(gen: AsyncGenerator<InputRecord>): Promise<TextRecord[]> {
  const out: TextRecord[] = [];
  for await (const r of gen) out.push(r.record);
  return out;
}

describe('produce input', () => {
  it('reads the gzip NDJSON Wikipedia edits with keys joined by | and ISO timestamps', async () => {
    const records = await all(readRecords({ file: WIKITICKER, keyFields: ['channel', 'page'], timestampField: 'time' }));
    const edits = readEdits();
    expect(records).toHaveLength(39244);
    records.forEach((r, i) => {
      expect(r.key!.toString()).toBe(edits[i]!.key);
      expect(r.value!.toString()).toBe(edits[i]!.value);
      expect(r.timestamp).toBe(edits[i]!.timestamp);
    });
    expect(new Set(records.map((r) => r.key!.toString())).size).toBe(35278);
  });

  it('reads the gzip CSV S&P 500 file: every row as a JSON object, keyed by ticker, dated at UTC midnight', async () => {
    let count = 0;
    let first: TextRecord | undefined;
    let emptyOpen = 0;
    const tickers = new Set<string>();
    for await (const { record: r, line } of readRecords({ file: SP500, keyFields: ['Name'], timestampField: 'date' })) {
      expect(line).toBe(count + 2); // after the header line
      first ??= r;
      count++;
      tickers.add(r.key!.toString());
      if ((JSON.parse(r.value!.toString()) as { open: string }).open === '') emptyOpen++;
    }
    expect(count).toBe(619040);
    expect(tickers.size).toBe(505);
    expect(emptyOpen).toBe(11);
    const row = JSON.parse(first!.value!.toString()) as Record<string, string>;
    expect(Object.keys(row)).toEqual(['date', 'open', 'high', 'low', 'close', 'volume', 'Name']);
    expect(first!.timestamp).toBe(Date.parse('2013-02-08T00:00:00Z'));
    expect(first!.key!.toString()).toBe(row.Name);
  });

  it('reads plain files, epoch-ms timestamps and skips blank lines', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'in.ndjson');
    fs.writeFileSync(file, '{"id":1,"ts":1000}\n\n{"id":2,"ts":"2000"}\r\n');
    const records = await all(readRecords({ file, keyFields: ['id'], timestampField: 'ts' }));
    expect(records.map((r) => [r.key!.toString(), r.value!.toString(), r.timestamp])).toEqual([
      ['1', '{"id":1,"ts":1000}', 1000],
      ['2', '{"id":2,"ts":"2000"}', 2000],
    ]);
    const gz = path.join(dir, 'in.csv.gz');
    fs.writeFileSync(gz, zlib.gzipSync('a,b\n1,x\n2,y\n'));
    expect((await all(readRecords({ file: gz, keyFields: [] }))).map((r) => [r.key, r.value!.toString()])).toEqual([
      [null, '{"a":"1","b":"x"}'],
      [null, '{"a":"2","b":"y"}'],
    ]);
  });

  it('names the line of a bad row after yielding the rows before it', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'bad.jsonl');
    fs.writeFileSync(file, '{"k":"a"}\n{"k":"b"}\n{"nok":1}\n');
    const seen: string[] = [];
    await expect(async () => {
      for await (const { record: r } of readRecords({ file, keyFields: ['k'] })) seen.push(r.key!.toString());
    }).rejects.toMatchObject({ code: 'INVALID_RECORD', context: { line: 3, field: 'k' } });
    expect(seen).toEqual(['a', 'b']);
    fs.writeFileSync(file, '{"k":"a"}\nnot json\n');
    const before: string[] = [];
    await expect(async () => {
      for await (const { record: r } of readRecords({ file, keyFields: ['k'] })) before.push(r.key!.toString());
    }).rejects.toMatchObject({ code: 'INVALID_RECORD', context: { line: 2 } });
    expect(before).toEqual(['a']);
    fs.writeFileSync(file, '{"t":"yesterday"}\n');
    await expect(all(readRecords({ file, keyFields: [], timestampField: 't' }))).rejects.toMatchObject({ code: 'INVALID_RECORD' });
  });

  it('reads CSV as written: quotes, escaped quotes, commas and newlines in fields, CRLF, a BOM; names the line of a bad row', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'in.csv');
    fs.writeFileSync(file, '\ufeffname,"note, quoted",n\r\nA,"say ""hi""",1\r\n\r\nB,"two\nlines",2\r\nC,\\ \u0001 \u00e9,3\r\n');
    const rows: Array<{ line: number; key: string; value: unknown }> = [];
    for await (const { line, record } of readRecords({ file, keyFields: ['name'] })) {
      rows.push({ line, key: record.key!.toString(), value: JSON.parse(record.value!.toString()) });
    }
    expect(rows).toEqual([
      { line: 2, key: 'A', value: { 'name': 'A', 'note, quoted': 'say "hi"', 'n': '1' } },
      { line: 5, key: 'B', value: { 'name': 'B', 'note, quoted': 'two\nlines', 'n': '2' } },
      { line: 6, key: 'C', value: { 'name': 'C', 'note, quoted': '\\ \u0001 \u00e9', 'n': '3' } },
    ]);
    fs.writeFileSync(file, 'a,b\n1,2\n3\n4,5\n');
    const seen: string[] = [];
    await expect(async () => {
      for await (const { record } of readRecords({ file, keyFields: ['a'] })) seen.push(record.key!.toString());
    }).rejects.toMatchObject({ code: 'INVALID_RECORD', context: { line: 3 } });
    expect(seen).toEqual(['1']);
    fs.writeFileSync(file, 'a,b\n1,2\n3,"open\n');
    await expect(all(readRecords({ file, keyFields: [] }))).rejects.toMatchObject({ code: 'INVALID_RECORD' });
  });

  it('tells formats by extension and refuses unknown ones', () => {
    expect(formatOf('x.json.gz')).toEqual({ format: 'ndjson', gzip: true });
    expect(formatOf('x.CSV')).toEqual({ format: 'csv', gzip: false });
    expect(() => formatOf('x.parquet')).toThrow(/cannot tell the format/);
  });

  it('ends with the stream error for a missing file or bad gzip, instead of crashing', async () => {
    const dir = tmpDir();
    await expect(all(readRecords({ file: path.join(dir, 'missing.json'), keyFields: [] }))).rejects.toMatchObject({ code: 'ENOENT' });
    const fake = path.join(dir, 'fake.json.gz');
    fs.writeFileSync(fake, '{"not":"gzip"}\n');
    await expect(all(readRecords({ file: fake, keyFields: [] }))).rejects.toMatchObject({ code: 'Z_DATA_ERROR' });
    const cut = path.join(dir, 'cut.json.gz');
    fs.writeFileSync(cut, fs.readFileSync(WIKITICKER).subarray(0, 100_000));
    const seen: number[] = [];
    await expect(async () => {
      for await (const { line } of readRecords({ file: cut, keyFields: [] })) seen.push(line);
    }).rejects.toMatchObject({ code: 'Z_BUF_ERROR' });
    expect(seen.length).toBeGreaterThan(0);
  });

  it('takes --format over an unknown extension', async () => {
    const file = path.join(tmpDir(), 'data.txt');
    fs.writeFileSync(file, '{"a":1}\n');
    expect(await all(readRecords({ file, format: 'ndjson', keyFields: [] }))).toHaveLength(1);
  });

  it('writes a CSV row\'s JSON object in header order, each name and value as JSON.stringify writes it, its length told beforehand', () => {
    fc.assert(fc.property(fc.uniqueArray(fc.string({ maxLength: 8 }), { minLength: 1, maxLength: 6 }).chain((header) => fc.tuple(
      fc.constant(header), fc.array(fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 })), { minLength: header.length, maxLength: header.length }),
    )), ([header, fields]) => {
      const names = header.map((h, i) => Buffer.from(`${i === 0 ? '{' : ','}${JSON.stringify(h)}:`, 'utf8'));
      const row = new CsvRowJson(names, fields);
      // In header order (an object would put integer-like names first): each name and value as JSON.stringify writes it.
      const expected = `{${header.map((h, i) => `${JSON.stringify(h)}:${JSON.stringify(fields[i])}`).join(',')}}`;
      const out = Buffer.alloc(row.byteLength + 4);
      expect(row.writeTo(out, 2)).toBe(2 + row.byteLength);
      expect(out.subarray(2, 2 + row.byteLength).toString('utf8')).toBe(expected);
      expect(row.byteLength).toBe(Buffer.byteLength(expected));
      expect(row.toString()).toBe(expected);
    }), { numRuns: 300 });
  });
});
