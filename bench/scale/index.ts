/**
 * The limits-at-scale benchmarks of issue 15 (`npm run bench -- --only scale`, or `--only scale-NAME` for one):
 * each starts its own `onelog serve` child with a temporary data directory and removes it afterwards.
 */
import { committedOffsetsBenchmark } from './committed-offsets.js';
import { compactionBenchmark } from './compaction.js';
import { scalePartitionsBenchmark } from './partitions.js';
import { restartBenchmark } from './restart.js';
import { websocketsBenchmark } from './websockets.js';

/** Sizes of the limits-at-scale benchmarks. */
export interface ScaleOptions {
  /** Partitions of the 10,000-partitions benchmark. */
  partitions: number;
  /** Distinct keys compacted (after the 2,000,000-key baseline). */
  compactionKeys: number;
  /** Groups x partitions committed offsets. */
  offsetGroups: number;
  offsetPartitions: number;
  /** Seconds the describe latency is measured under commits, s. */
  offsetSeconds: number;
  /** WebSocket connections opened. */
  websockets: number;
  /** GB (10^9 bytes) written before the restarts. */
  restartGigabytes: number;
  /** Where the restart benchmark's data directory is made. @default os.tmpdir() */
  restartDir?: string;
}

const NAMES = ['partitions', 'compaction', 'offsets', 'websockets', 'restart'] as const;

/**
 * Runs one limits-at-scale benchmark by name (`partitions`, `compaction`, `offsets`, `websockets`, `restart`) or
 * `all` of them one after the other.
 * @throws on an unknown name
 */
export async function scaleBenchmarks(which: string, o: ScaleOptions): Promise<void> {
  if (which !== 'all' && !(NAMES as readonly string[]).includes(which)) throw new Error(`--only scale-${which}: not one of ${NAMES.join(', ')}`);
  const run = (name: (typeof NAMES)[number]) => which === 'all' || which === name;
  if (run('partitions')) await scalePartitionsBenchmark({ partitions: o.partitions });
  if (run('compaction')) await compactionBenchmark({ keys: o.compactionKeys });
  if (run('offsets')) await committedOffsetsBenchmark({ groups: o.offsetGroups, partitions: o.offsetPartitions, seconds: o.offsetSeconds });
  if (run('websockets')) await websocketsBenchmark({ connections: o.websockets });
  if (run('restart')) await restartBenchmark({ gigabytes: o.restartGigabytes, partitions: 4, cleanRestarts: 3, coldCache: true, baseDir: o.restartDir });
}
