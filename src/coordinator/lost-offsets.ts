/**
 * A lost offset store, found when the broker starts (docs/guarantees.md): the catalog records which subscriptions
 * committed ({@link CommitMarks}); one whose group has no committed offset of its topic in the offset store lost
 * them (a volume not mounted, a restore without `offsets/data.mdb`, a flushed Redis), since nothing but deleting
 * the group or the topic (which deletes the subscription too) removes committed offsets. Starting as if the group
 * were new would put it at its start policy (`latest` skips every record it had not read) without a word, so the
 * broker refuses to start ({@link lostOffsetsRefusal}); told to start anyway, it pauses each such partition for
 * its group with an `offset-out-of-range` alert ({@link pauseLostOffsets}), as a committed offset below the log
 * start pauses it, until an executed reset decides where the group resumes. A subscription all of whose
 * partitions are paused is not lost again: the operator was told, so the next start goes on.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Alerts } from '../monitoring/alerts.js';
import type { OffsetStore } from '../offsets/offset-store.js';
import { OnelogError } from '../protocol/errors.js';
import type { Logs } from '../log/logs.js';
import type { OffsetStoreDescription } from '../offsets/offset-store.js';
import { offsetLost } from './out-of-range.js';

/** A subscription that committed whose committed offsets the offset store no longer holds. */
export interface LostSubscription {
  groupId: string;
  topic: string;
  /** The topic's partitions not paused for the group yet. */
  partitions: number[];
}

/** Groups whose committed offsets are listed at once at start-up (one `list` each). */
const GROUPS_AT_ONCE = 32;
/** Group ids a refusal names; the count says how many more. */
const NAMED_GROUPS = 10;

/**
 * The subscriptions that committed (the catalog says) of which the offset store holds no committed offset, with
 * their partitions not paused yet; those with every partition paused are left out.
 * @param partitionCounts each topic's partition count, from the catalog
 */
export async function findLostOffsets(
  catalog: Catalog, offsets: OffsetStore, partitionCounts: ReadonlyMap<string, number>,
): Promise<LostSubscription[]> {
  const committed = new Map<string, string[]>();
  for (const s of await catalog.subscriptions.listCommitted()) committed.set(s.groupId, [...(committed.get(s.groupId) ?? []), s.topic]);
  const groups = [...committed.keys()];
  const lost: LostSubscription[] = [];
  for (let i = 0; i < groups.length; i += GROUPS_AT_ONCE) {
    const listed = await Promise.all(groups.slice(i, i + GROUPS_AT_ONCE).map(async (groupId) => ({ groupId, stored: await offsets.list(groupId) })));
    for (const { groupId, stored } of listed) {
      const held = new Set(stored.map((o) => o.topic));
      const missing = committed.get(groupId)!.filter((topic) => !held.has(topic) && partitionCounts.has(topic));
      if (missing.length === 0) continue;
      const paused = await catalog.pauses.list(groupId);
      for (const topic of missing) {
        const partitions = [...Array(partitionCounts.get(topic)!).keys()].filter((p) => !paused.has(`${topic}/${p}`));
        if (partitions.length > 0) lost.push({ groupId, topic, partitions });
      }
    }
  }
  return lost;
}

/**
 * The refusal to start over lost offsets, as the one for a missing log directory: what is missing, the usual
 * causes, and what to do.
 * @param dataDir the broker's data directory (context)
 */
export function lostOffsetsRefusal(lost: readonly LostSubscription[], store: OffsetStoreDescription, dataDir: string): OnelogError {
  const groupIds = [...new Set(lost.map((l) => l.groupId))];
  const named = groupIds.slice(0, NAMED_GROUPS).join(', ') + (groupIds.length > NAMED_GROUPS ? `, and ${groupIds.length - NAMED_GROUPS} more` : '');
  return new OnelogError('STORAGE_ERROR', `the catalog says ${groupIds.length} group(s) committed offsets (${named}) but the offset store ` +
    `(${store.name}) holds none of theirs for ${lost.length} subscription(s): ${store.lostHow} Put it back. To start anyway, with those ` +
    'groups\' partitions paused until an offset reset decides where each resumes (onelog offsets reset GROUP --topic T --to-datetime TIME ' +
    '--execute), start with --allow-missing-offsets; to start over, use an empty --data-dir.',
  { dataDir, offsetStore: store.name, groups: groupIds.length, subscriptions: lost.length, groupIds: groupIds.slice(0, NAMED_GROUPS) });
}

/**
 * Pauses the partitions of each lost subscription for its group with {@link offsetLost}'s error, and raises an
 * `offset-out-of-range` alert on each (resolved once a reset lifts the pause, as for a committed offset below the
 * log start).
 */
export async function pauseLostOffsets(
  lost: readonly LostSubscription[], s: { catalog: Catalog; logs: Logs; alerts: Alerts; clock: Clock; logger: Logger }, store: OffsetStoreDescription,
): Promise<void> {
  for (const { groupId, topic, partitions } of lost) {
    for (const partition of partitions) {
      const log = s.logs.get(topic, partition);
      const error = offsetLost({ groupId, topic, partition, logStartOffset: log.logStartOffset, highWatermark: log.highWatermark, offsetStore: store.name });
      await s.catalog.pauses.add(groupId, { topic, partition }, { ...error.toJSON(), paused: true }, s.clock.now());
      await s.alerts.raise({ groupId, kind: 'offset-out-of-range', topic, partition, message: error.message, context: error.context });
    }
  }
  s.logger.warn({ offsetStore: store.name, groups: new Set(lost.map((l) => l.groupId)).size, subscriptions: lost.length },
    'started with --allow-missing-offsets: the partitions of the groups whose committed offsets were lost are paused until an offset reset');
}
