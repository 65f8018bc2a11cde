/**
 * `npm run bench -- --only sweep`: end-to-end latency across rates, partitions and producers, not at one point.
 * For each of 1, 16 and 100 partitions and 1 and 4 producers (each its own client and data socket), records of
 * 100 B are sent on a fixed schedule at 1,000, 10,000, 50,000 and 100,000 records/s and received by one consumer
 * group member (bench/peers/latency.ts: latency from each record's scheduled send time, no coordinated
 * omission). Then the maximum sustainable rate, as OpenMessaging Benchmark finds it: the highest rate at which
 * the backlog stops growing, here the highest rate whose records are all sent on time (send lag p99 under
 * 100 ms) and all received within 500 ms of the last one's scheduled time, found by doubling and then halving
 * the step; its latency is printed beside the others.
 *
 * Prints one table, writes the points to bench/results/latency-sweep.json and a chart (vega-lite, SVG) to
 * bench/results/latency-sweep.svg.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as vega from 'vega';
import { compile } from 'vega-lite';
import { Onelog } from '../src/client/index.js';
import { startServer } from '../test/helpers/processes.js';
import type { Latency, PeerWorkload } from './peers/common.js';
import { loadAverage, machineLine } from './peers/common.js';
import { measureLatency } from './peers/latency.js';
import { latencyConsumer } from './peers/onelog.js';

/** What the sweep varies. */
export interface SweepOptions {
  rates: number[];
  partitions: number[];
  producers: number[];
  /** Measured seconds per point (after a 1 s warm-up). */
  seconds: number;
}

/** One measured point. */
interface Point extends Latency {
  partitions: number;
  producers: number;
  /** Records per second asked for; for the maximum sustainable rate, the rate found. */
  rate: number;
  maxSustainable: boolean;
}

const RECORD_BYTES = 100;
/** A rate is sustainable when the backlog drains this fast after sending ends, ms. */
const MAX_DRAIN_MS = 500;
/** ... and the harness sent on schedule (p99 send lag below this, µs). */
const MAX_SEND_LAG_US = 100_000;
/** The search for the maximum stops when its step is below this share of the rate. */
const SEARCH_PRECISION = 0.1;
const RESULTS = path.resolve(import.meta.dirname, 'results');

export async function latencySweep(o: SweepOptions): Promise<void> {
  console.log('== latency sweep: end-to-end latency by rate, partitions and producers ==');
  console.log(`setup: child \`onelog serve\` (flush.policy interval) on loopback; records of ${RECORD_BYTES} B on a fixed schedule ` +
    `(sent per ~1 ms tick, rotating over the producers, each a client with its own data socket), one consumer group member ` +
    `(binary data path, commit beside each fetch, maxWaitMs 20); ${o.seconds} s measured after 1 s of warm-up per point; ` +
    `latency from each record's scheduled send time to its receipt (HdrHistogram); maximum sustainable rate: send lag p99 < ` +
    `${MAX_SEND_LAG_US / 1000} ms and every record received within ${MAX_DRAIN_MS} ms after sending ends`);
  console.log(machineLine());
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-sweep-'));
  const server = await startServer(dataDir);
  const points: Point[] = [];
  let run = 0;
  try {
    for (const partitions of o.partitions) {
      for (const producers of o.producers) {
        const measure = async (rate: number, seconds: number): Promise<Latency> => {
          const topic = `sweep-${run++}`;
          const clients = Array.from({ length: producers + 1 }, () => new Onelog({ url: server.url, binary: true }));
          try {
            await clients[0]!.admin().createTopic({ topic, partitions, config: { flushPolicy: 'interval' } });
            const sending = clients.slice(1).map((c) => c.producer());
            let turn = 0;
            const workload: PeerWorkload = {
              records: 0, recordSizes: [], batchRecords: 1000, inFlight: 1,
              latencyRate: rate, latencySeconds: seconds, latencyWarmupSeconds: 1, latencyRecordBytes: RECORD_BYTES,
            };
            return await measureLatency({
              send: (values) => sending[turn++ % sending.length]!.send({ topic, messages: values.map((value) => ({ value })) }),
              startConsumer: latencyConsumer(clients[0]!, topic, { groupId: topic, maxRecords: 5000, maxBytes: 16 << 20, maxWaitMs: 20 }),
            }, workload, 'tick');
          } finally {
            for (const c of clients) c.close();
          }
        };
        for (const rate of o.rates) {
          const l = await measure(rate, o.seconds);
          points.push({ ...l, partitions, producers, rate, maxSustainable: false });
          printPoint(points.at(-1)!);
        }
        const max = await maxSustainableRate((rate) => measure(rate, 2), Math.max(...o.rates));
        if (max) {
          points.push({ ...max.latency, partitions, producers, rate: max.rate, maxSustainable: true });
          printPoint(points.at(-1)!);
        }
      }
    }
  } finally {
    await server.stop('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  printTable(points);
  fs.mkdirSync(RESULTS, { recursive: true });
  fs.writeFileSync(path.join(RESULTS, 'latency-sweep.json'), `${JSON.stringify({ machine: machineLine(), points }, null, 2)}\n`);
  fs.writeFileSync(path.join(RESULTS, 'latency-sweep.svg'), await chart(points));
  console.log(`wrote bench/results/latency-sweep.json and bench/results/latency-sweep.svg (${loadAverage()})`);
}

function sustainable(l: Latency): boolean {
  return l.missing === 0 && l.drainMs <= MAX_DRAIN_MS && l.sendLagP99Us <= MAX_SEND_LAG_US;
}

/**
 * The highest sustainable rate: doubles from `from` while sustainable, then halves the step between the last
 * sustainable and the first unsustainable rate. Answers null when even `from / 8` is not sustainable.
 */
async function maxSustainableRate(measure: (rate: number) => Promise<Latency>, from: number): Promise<{ rate: number; latency: Latency } | null> {
  let good: { rate: number; latency: Latency } | null = null;
  let bad = Infinity;
  let rate = from;
  for (;;) {
    const latency = await measure(rate);
    if (sustainable(latency)) good = { rate, latency };
    else bad = rate;
    let next: number;
    if (bad === Infinity) next = rate * 2;
    else if (good === null) next = Math.round(bad / 2);
    else if (bad - good.rate < SEARCH_PRECISION * good.rate) return good;
    else next = Math.round((good.rate + bad) / 2);
    if (next > 4_000_000) return good;
    if (good === null && next < from / 8) return null;
    rate = next;
  }
}

const ms = (us: number) => (us / 1000).toFixed(2);

function printPoint(p: Point): void {
  console.log(`  ${p.partitions} partitions, ${p.producers} producer${p.producers > 1 ? 's' : ''}, ${p.maxSustainable ? 'max sustainable ' : ''}` +
    `${p.rate.toLocaleString('en-US')} records/s: p50 ${ms(p.p50Us)} ms, p99 ${ms(p.p99Us)} ms, p99.9 ${ms(p.p999Us)} ms ` +
    `(${p.measured.toLocaleString('en-US')} records, drained ${p.drainMs.toFixed(0)} ms after sending${p.missing ? `, ${p.missing} MISSING` : ''}; ${loadAverage()})`);
}

function printTable(points: Point[]): void {
  const header = ['partitions', 'producers', 'rate, records/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'drain ms', 'missing'];
  const rows = points.map((p) => [String(p.partitions), String(p.producers), `${p.maxSustainable ? 'max ' : ''}${p.rate.toLocaleString('en-US')}`,
    ms(p.p50Us), ms(p.p99Us), ms(p.p999Us), ms(p.maxUs), p.drainMs.toFixed(0), String(p.missing)]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  console.log('\nlatency sweep (flush.policy interval, 100 B records)');
  for (const r of [header, widths.map((w) => '-'.repeat(w)), ...rows]) console.log(r.map((c, i) => c.padStart(widths[i]!)).join('  '));
}

/** p50, p99 and p99.9 against the rate, one panel per percentile, a line per partitions x producers (vega-lite, SVG). */
export async function chart(points: Point[]): Promise<string> {
  const values = points.flatMap((p) => [['p50', p.p50Us], ['p99', p.p99Us], ['p99.9', p.p999Us]].map(([percentile, us]) => ({
    rate: p.rate, latencyMs: (us as number) / 1000, percentile, setup: `${p.partitions} partitions, ${p.producers} producer${p.producers > 1 ? 's' : ''}`,
    point: p.maxSustainable ? 'maximum sustainable rate' : 'fixed rate',
  })));
  const spec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: 'onelog end-to-end latency by rate (100 B records, flush.policy interval)',
    data: { values },
    facet: { column: { field: 'percentile', type: 'nominal', title: null, sort: ['p50', 'p99', 'p99.9'] } },
    spec: {
      width: 260, height: 220,
      mark: { type: 'line', point: true },
      encoding: {
        x: { field: 'rate', type: 'quantitative', scale: { type: 'log' }, title: 'records/s' },
        y: { field: 'latencyMs', type: 'quantitative', scale: { type: 'log' }, title: 'latency, ms' },
        color: { field: 'setup', type: 'nominal', title: null, legend: { labelLimit: 400 } },
        shape: { field: 'point', type: 'nominal', title: null, legend: { labelLimit: 400 } },
      },
    },
  };
  const view = new vega.View(vega.parse(compile(spec as Parameters<typeof compile>[0]).spec), { renderer: 'none' });
  return view.toSVG();
}
