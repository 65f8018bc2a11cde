/**
 * A latency run's consumer in a process of its own (bench/latency-modes.ts): `tsx consumer-process.ts JSON` with
 * `{ url, topic, groupId, delivery: 'pull' | 'push' }`. It joins the group from the earliest offset and sends its
 * parent, over the IPC channel, each record's first 8 bytes (the scheduled send time) and its receipt time, both
 * on the clock both processes read (bench/peers/latency.ts `now`), in messages of `number[]` pairs, one per
 * event-loop turn that received records. The message `'stop'` stops it; it then exits.
 */
import { Onelog } from '../../src/client/index.js';
import { now } from '../peers/latency.js';

const { url, topic, groupId, delivery } = JSON.parse(process.argv[2]!) as { url: string; topic: string; groupId: string; delivery: 'pull' | 'push' };
const onelog = new Onelog({ url, binary: true });
let pending: number[] = [];
let flushing = false;
const onValue = (value: Buffer | null) => {
  pending.push(value!.readDoubleLE(0), now());
  if (flushing) return;
  flushing = true;
  setImmediate(() => {
    process.send!(pending);
    pending = [];
    flushing = false;
  });
};
const consumer = delivery === 'push'
  ? onelog.pushConsumer({ groupId, startPolicy: 'earliest' })
  : onelog.consumer({ groupId, startPolicy: 'earliest', maxRecords: 1000, maxWaitMs: 20 });
consumer.subscribe({ topic });
const running = consumer.run({ eachMessage: ({ message }) => onValue(message.value) });
process.on('message', (message) => {
  if (message !== 'stop') return;
  void consumer.stop().then(() => running).finally(() => {
    onelog.close();
    process.exit(0);
  });
});
process.send!('ready');
