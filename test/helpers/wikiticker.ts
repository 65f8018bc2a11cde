/** The real Wikipedia edits file, read the way `onelog produce --key-field channel --key-field page` keys it. */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { partitionForKey } from '../../src/protocol/murmur2.js';

export const WIKITICKER = path.resolve(import.meta.dirname, '../../examples/data/wikiticker-2015-09-12-sampled.json.gz');

/** One edit as the broker should store it. */
export interface Edit {
  key: string;
  value: string;
  timestamp: number;
}

/** Every edit in file order. */
export function readEdits(): Edit[] {
  const text = zlib.gunzipSync(fs.readFileSync(WIKITICKER)).toString('utf8');
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line) => {
      const o = JSON.parse(line) as { channel: string; page: string; time: string };
      return { key: `${o.channel}|${o.page}`, value: line, timestamp: Date.parse(o.time) };
    });
}

/** Edits per partition, in the order the partition stores them (offset = index). */
export function editsByPartition(edits: Edit[], partitions: number): Edit[][] {
  const out = Array.from({ length: partitions }, () => [] as Edit[]);
  for (const e of edits) out[partitionForKey(Buffer.from(e.key, 'utf8'), partitions)]!.push(e);
  return out;
}
