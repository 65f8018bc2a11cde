/**
 * `npm run bench`: onelog's benchmarks. Each prints its setup and its figures. Options:
 * `--only client|storage|offsets`, `--records N` and `--record-bytes B` (client benchmark; defaults 1,000,000
 * and 100), `--scale X` (storage benchmark sizes, default 1), `--offset-keys N` (offset store benchmark,
 * default 10,000,000).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { clientThroughput } from './client-throughput.js';
import { offsetStoreBenchmark } from './offset-store.js';
import { storageBenchmark } from './storage.js';

const { values } = parseArgs({
  options: {
    only: { type: 'string' },
    records: { type: 'string', default: '1000000' },
    'record-bytes': { type: 'string', default: '100' },
    scale: { type: 'string', default: '1' },
    'offset-keys': { type: 'string', default: '10000000' },
  },
});

if (values.only === undefined || values.only === 'storage') await storageBenchmark({ scale: Number(values.scale) });
if (values.only === undefined || values.only === 'offsets') await offsetStoreBenchmark({ keys: Number(values['offset-keys']) });
if (values.only === undefined || values.only === 'client') {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-'));
  try {
    await clientThroughput({
      records: Number(values.records),
      recordBytes: Number(values['record-bytes']),
      partitions: 4,
      batchRecords: 10_000,
      inFlight: 4,
      fetchRecords: 10_000,
      dataDir,
    });
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
