/**
 * A latency run's consumer in a process of its own (bench/latency-modes.ts): `tsx consumer-process.ts JSON` with
 * `{ url, topic, groupId, delivery: 'pull' | 'push' }`. It joins the group from the earliest offset and sends its
 * parent, over the IPC channel, each record's first 8 bytes (the scheduled send time) and its receipt time, both
 * on the clock both processes read (bench/peers/latency.ts `now`), in messages of `number[]` pairs, one per
 * event-loop turn that received records. The message `'stop'` stops it; it then exits.
 */
import { Onelog } from '../../src/client/index.js';
import { now } from '../peers/latency.js';
import { latencyConsumer } from '../peers/onelog.js';

const { url, topic, groupId, delivery } = JSON.parse(process.argv[2]!) as { url: string; topic: string; groupId: string; delivery: 'pull' | 'push' };
const onelog = new Onelog({ url, binary: true });
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
// As the in-process consumers of bench/latency-modes.ts are set up.
const stop = await latencyConsumer(onelog, topic, { groupId, maxRecords: 1000, maxWaitMs: 20 }, delivery)(onValue);
process.on('message', (message) => {
  if (message !== 'stop') return;
  void stop().finally(() => {
    onelog.close();
    process.exit(0);
  });
});
process.send!('ready');
