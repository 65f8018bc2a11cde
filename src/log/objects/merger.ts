/**
 * The merge job of cluster mode (run under the `job:merge` lease; docs/cluster.md): a flush writes one object
 * per broker per window holding a little of many partitions, so a partition's history is many small chunks, each
 * an index row and a GET. The merger rewrites runs of small consecutive chunks of one partition into one
 * per-partition object (`segments/<topic>/<partition>/<baseOffset>-<uuid>`, the same layout with one chunk),
 * then replaces their index rows by one, in one transaction that checks the rows are still as read. The
 * objects no row refers to any more are retired, and the sweep deletes them a grace later, so a reader that
 * looked up the old rows just before can still GET them.
 */
import { randomUUID } from 'node:crypto';
import { LOG_OVERHEAD, readBatchHeader } from '../../protocol/record-batch.js';
import { buildObject } from './object-format.js';
import type { ObjectStore } from './object-store.js';
import { replaceByMerged } from './sequencer.js';
import type { IndexEntry, Sequencer } from './sequencer.js';

/** Options of {@link mergePartition}. */
export interface MergeOptions {
  /** A merged object holds at most about this many bytes. @default 8388608 (8 MiB) */
  targetBytes?: number;
  /** Chunks of at least this many bytes are left as they are. @default a quarter of targetBytes */
  smallChunkBytes?: number;
  /** Fewer consecutive small chunks than this are not worth a merge. @default 4 */
  minChunks?: number;
}

/** What one merge of a partition did. */
export interface MergeResult {
  /** Index rows replaced (0: nothing to merge, or another change won). */
  rowsMerged: number;
  objectKey?: string;
  bytes?: number;
}

/**
 * Merges the oldest run of small consecutive chunks of a partition, if there is one worth it.
 * @throws OnelogError `STORAGE_ERROR` if the object store or PostgreSQL fails (nothing of the merge is then indexed)
 */
export async function mergePartition(
  sequencer: Sequencer, objects: ObjectStore, topic: string, partition: number, options: MergeOptions = {},
): Promise<MergeResult> {
  const targetBytes = options.targetBytes ?? 8 * 1024 * 1024;
  const small = options.smallChunkBytes ?? Math.floor(targetBytes / 4);
  const minChunks = options.minChunks ?? 4;
  const state = await sequencer.state(topic, partition);
  if (state === undefined) return { rowsMerged: 0 };
  // The oldest run of small chunks whose bytes fit the target.
  let run: IndexEntry[] = [];
  let bytes = 0;
  let offset = state.logStartOffset;
  for (;;) {
    const rows = await sequencer.lookup(topic, partition, offset, 256);
    if (rows.length === 0) break;
    for (const row of rows) {
      if (row.length < small && bytes + row.length <= targetBytes) {
        run.push(row);
        bytes += row.length;
      } else if (run.length >= minChunks) {
        break;
      } else {
        run = [];
        bytes = 0;
      }
    }
    if (run.length >= minChunks && (bytes >= targetBytes - small || rows.length < 256)) break;
    offset = rows[rows.length - 1]!.endOffset;
  }
  if (run.length < minChunks) return { rowsMerged: 0 };
  const batches: Buffer[] = [];
  for (const row of run) {
    const chunk = await objects.get(row.objectKey, { position: row.position, length: row.length });
    for (let pos = 0; pos < chunk.length;) {
      const size = LOG_OVERHEAD + readBatchHeader(chunk, pos).batchLength;
      batches.push(chunk.subarray(pos, pos + size));
      pos += size;
    }
  }
  const { body, chunks } = buildObject([{ topic, partition, batches }]);
  const objectKey = `segments/${encodeURIComponent(topic)}/${partition}/${run[0]!.baseOffset}-${randomUUID()}`;
  await objects.put(objectKey, body);
  const replaced = await replaceByMerged(sequencer, topic, partition, run, { objectKey, length: chunks[0]!.length, sizeBytes: body.length });
  if (!replaced) {
    await objects.delete([objectKey]);
    return { rowsMerged: 0 };
  }
  return { rowsMerged: run.length, objectKey, bytes: body.length };
}
