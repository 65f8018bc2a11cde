/**
 * A latency run's consumer in a process of its own (bench/latency-modes.ts): `tsx consumer-process.ts JSON` with a
 * {@link ConsumerSpec}: onelog's group member (pull or push), Redis's XREADGROUP consumer or JetStream's `consume()`,
 * each as bench/peers/ drives it in the harness's process. It sends its parent, over the IPC channel, each record's
 * first 8 bytes (the scheduled send time) and its receipt time, both on the clock both processes read
 * (bench/peers/latency.ts `now`), in messages of `number[]` pairs, one per event-loop turn that received records.
 * The message `'stop'` stops it; it then exits.
 */
import { Onelog } from '../../src/client/index.js';
import { jetstreamLatencyConsumer } from '../peers/jetstream.js';
import type { LatencyTarget } from '../peers/latency.js';
import { now } from '../peers/latency.js';
import { latencyConsumer } from '../peers/onelog.js';
import { redisLatencyConsumer } from '../peers/redis-streams.js';

/** Which consumer the process runs, and where it reads. */
export type ConsumerSpec =
  | { system: 'onelog'; url: string; topic: string; groupId: string; delivery: 'pull' | 'push'; overlapCommits?: boolean }
  | { system: 'redis'; key: string; group: string; count: number }
  | { system: 'jetstream'; stream: string; durable: string; maxMessages: number };

/** Records per fetch (pull) or record credit (push) of onelog's consumer, as in the harness's process. */
const ONELOG_MAX_RECORDS = 1000;
/** Long-poll wait of onelog's pull consumer, ms. */
const ONELOG_MAX_WAIT_MS = 20;

function startConsumer(spec: ConsumerSpec): { start: LatencyTarget['startConsumer']; close: () => void } {
  switch (spec.system) {
    case 'onelog': {
      const onelog = new Onelog({ url: spec.url, binary: true });
      const options = { groupId: spec.groupId, maxRecords: ONELOG_MAX_RECORDS, maxWaitMs: ONELOG_MAX_WAIT_MS, overlapCommits: spec.overlapCommits };
      return { start: latencyConsumer(onelog, spec.topic, options, spec.delivery), close: () => onelog.close() };
    }
    case 'redis':
      return { start: redisLatencyConsumer(spec.key, spec.group, spec.count), close: () => {} };
    case 'jetstream':
      return { start: jetstreamLatencyConsumer({ stream: spec.stream, durable: spec.durable }, spec.maxMessages), close: () => {} };
  }
}

const spec = JSON.parse(process.argv[2]!) as ConsumerSpec;
let pending: number[] = [];
let flushing = false;
const onValue = (value: Buffer) => {
  pending.push(value.readDoubleLE(0), now());
  if (flushing) return;
  flushing = true;
  setImmediate(() => {
    process.send!(pending);
    pending = [];
    flushing = false;
  });
};
const consumer = startConsumer(spec);
const stop = await consumer.start(onValue);
process.on('message', (message) => {
  if (message !== 'stop') return;
  void stop().finally(() => {
    consumer.close();
    process.exit(0);
  });
});
process.send!('ready');
