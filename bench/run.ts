/**
 * `npm run bench`: onelog's benchmarks. Each prints its setup and its figures. Options:
 * `--records N` (default 1,000,000), `--record-bytes B` (default 100).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { clientThroughput } from './client-throughput.js';

const { values } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    'record-bytes': { type: 'string', default: '100' },
  },
});

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
