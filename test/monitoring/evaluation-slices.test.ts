/**
 * The evaluation of every group's alerts on a broker with many group partitions (embedded broker, manual clock,
 * `evaluationSlicePartitions: 1` so that a run has many slices): it lets the event loop turn between slices, a
 * describe of one group waits for that group's evaluations only (the bug: `describeGroup` awaited the evaluator's
 * idleness, 292 s with 1,000 groups x 1,000 partitions) yet shows the alerts they left, and a close ends a run.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/common/clock.js';
import { tmpDir } from '../helpers/tmp.js';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;
const GROUPS = 60;
const PARTITIONS = 10;
const groupId = (g: number) => `g${String(g).padStart(3, '0')}`;
/** Listed last of the groups: an evaluation of every group in their order reaches it last. */
const LAST = groupId(GROUPS - 1);

let clock: ManualClock;
let broker: Broker;

beforeEach(async () => {
  clock = new ManualClock(T0);
  broker = await Broker.open({
    dataDir: tmpDir(), clock, sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0,
    monitoring: { alertCheckIntervalMs: 0, evaluationSlicePartitions: 1 },
  });
  await broker.createTopic({ topic: 't', partitions: PARTITIONS, config: { retentionMs: -1 } });
  for (let p = 0; p < PARTITIONS; p++) await broker.produce({ topic: 't', records: [{ key: null, value: Buffer.from('v'), partition: p }] });
  for (let g = 0; g < GROUPS; g++) {
    await broker.subscribe({ groupId: groupId(g), topic: 't', startPolicy: 'earliest', stallMs: MINUTE });
    await broker.commitOffsets({ groupId: groupId(g), topic: 't', offsets: Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, offset: 0 })) });
  }
});

afterEach(() => broker.close());

/** Tracks whether `p` has settled. */
function tracked(p: Promise<unknown>): { done: () => boolean; promise: Promise<unknown> } {
  let done = false;
  return { done: () => done, promise: p.then(() => (done = true)) };
}

/** Counts turns of the event loop until stopped. */
function turnCounter(): { count: () => number; stop: () => void } {
  let turns = 0;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return { count: () => turns, stop: () => (stopped = true) };
}

describe('evaluation of every group in slices', () => {
  it('lets the event loop turn after every slice of an evaluation of every group', async () => {
    const turns = turnCounter();
    await broker.evaluateAlerts();
    turns.stop();
    // 600 group partitions, one a slice: before, the whole run went by without a single turn.
    expect(turns.count()).toBeGreaterThanOrEqual(GROUPS * PARTITIONS);
  });

  it('answers a describe of one group before an evaluation of every group under way ends', async () => {
    const all = tracked(broker.evaluateAlerts());
    const described = await broker.describeGroup(LAST);
    expect(all.done()).toBe(false); // before: the describe waited for the evaluation of all 60 groups
    expect(described.subscriptions[0]!.partitions).toHaveLength(PARTITIONS);
    await all.promise;
  });

  it('shows in a describe the alerts a commit\'s evaluation left, without waiting for every group\'s', async () => {
    await broker.evaluateAlerts(); // unread records since now
    clock.advance(MINUTE);
    await broker.evaluateAlerts();
    expect((await broker.listAlerts({ groupId: LAST, active: true })).map((a) => a.kind)).toEqual(Array(PARTITIONS).fill('consumer-stalled'));

    const all = tracked(broker.evaluateAlerts());
    // The commit asks for an evaluation of its group (it has open alerts) and does not wait for it.
    await broker.commitOffsets({ groupId: LAST, topic: 't', offsets: [{ partition: 0, offset: 1 }] });
    const { alerts } = await broker.describeGroup(LAST);
    expect(all.done()).toBe(false);
    const partition0 = alerts.filter((a) => a.partition === 0);
    expect(partition0.map((a) => [a.kind, a.resolvedAt])).toEqual([['consumer-stalled', T0 + MINUTE]]);
    expect(alerts.filter((a) => a.resolvedAt === null)).toHaveLength(PARTITIONS - 1);
    await all.promise;
  });

  it('lists a group\'s alerts without waiting for an evaluation of every group', async () => {
    const all = tracked(broker.evaluateAlerts());
    expect(await broker.listAlerts({ groupId: LAST })).toEqual([]);
    expect(all.done()).toBe(false);
    await all.promise;
  });

  it('ends an evaluation of every group under way when the broker closes', async () => {
    const all = tracked(broker.evaluateAlerts());
    await new Promise((resolve) => setImmediate(resolve));
    await broker.close();
    await all.promise; // resolved, not left hanging; the rest of the groups were not evaluated
    expect(all.done()).toBe(true);
  });
});
