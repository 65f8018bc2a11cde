/**
 * End-to-end latency at a fixed rate, without coordinated omission: record i is SCHEDULED at
 * `start + i / rate` whatever happened before, its scheduled time travels in the first 8 bytes of its value
 * (a float64, ms of the machine's monotonic clock, {@link now}, which a consumer in another process reads alike),
 * and the consumer
 * records `receipt time - scheduled time` into an HdrHistogram. A stalled producer, a slow acknowledgement or
 * a late timer therefore shows as latency instead of silently sending later. The producer does not wait for
 * acknowledgements before the next tick (open loop); it stops sending only past a cap of unacknowledged records,
 * and those records' wait is measured too.
 *
 * Sending: a timer ticks every ~1 ms; in `'tick'` mode the records due at a tick go out in one request, in
 * `'record'` mode each in a request of its own.
 */
import { build } from 'hdr-histogram-js';
import type { Latency, PeerWorkload } from './common.js';
import { fillerValue, waitFor } from './common.js';

/** How a system is driven for the latency run. */
export interface LatencyTarget {
  /** Sends these values as one request (a batch, a pipeline, or publishes); resolves once acknowledged. */
  send(values: Buffer[]): Promise<unknown>;
  /**
   * Starts a consumer that calls `onValue` with every record's value (at least its first 8 bytes) and, for a
   * consumer in another process, the record's receipt time there ({@link now}); resolves with a function that
   * stops it.
   */
  startConsumer(onValue: (value: Buffer, receivedAt?: number) => void): Promise<() => Promise<void>>;
}

export type LatencySending = 'tick' | 'record';

/** Most records in one request: a harness that fell behind sends what is due in several (brokers cap a request). */
const MAX_RECORDS_PER_REQUEST = 10_000;
/** Most records sent and not yet acknowledged; past it the producer holds back (and the wait is measured). */
const MAX_UNACKED_RECORDS = 100_000;
/** How long to wait for the last records after the schedule ended, ms. */
const DRAIN_MS = 10_000;
/** A probe record's scheduled time: sent until the consumer receives one, before the schedule starts. */
const PROBE = -1;

/**
 * The latency clock: ms of the machine's monotonic clock (CLOCK_MONOTONIC, ns precision), the same in every
 * process on the machine. (`performance.timeOrigin + performance.now()` is not: each process fixes its own
 * time origin, and two processes were seen 200-370 ms apart.)
 */
export function now(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Slowest moments kept per run, with when they were scheduled. */
const WORST = 20;
/** Records scheduled this close (ms) count as one moment: a stall delays every record sent during it. */
const MOMENT_MS = 50;

/** Notes the record scheduled at `scheduled` (µs late) in `worst`: the slowest record of each moment, slowest first. */
function noteWorst(worst: [number, number][], scheduled: number, us: number): void {
  const same = worst.findIndex(([at]) => Math.abs(at - scheduled) < MOMENT_MS);
  if (same >= 0) {
    if (worst[same]![1] >= us) return;
    worst.splice(same, 1);
  }
  let i = worst.length;
  while (i > 0 && worst[i - 1]![1] < us) i--;
  worst.splice(i, 0, [scheduled, us]);
  if (worst.length > WORST) worst.pop();
}

/** A time on {@link now}'s clock as epoch ms (what bench/latency/observe.mjs records). */
function toEpoch(monotonicMs: number): number {
  return Date.now() - (now() - monotonicMs);
}

function histogram() {
  // µs, 1 µs to 60 s at 3 significant digits (larger values resize the histogram).
  return build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
}

export async function measureLatency(target: LatencyTarget, w: PeerWorkload, sending: LatencySending): Promise<Latency> {
  if (w.latencyRecordBytes < 8) throw new Error('latency records need at least 8 bytes');
  const template = fillerValue(w.latencyRecordBytes);
  const valueAt = (scheduled: number) => {
    const value = Buffer.from(template);
    value.writeDoubleLE(scheduled, 0);
    return value;
  };
  const latency = histogram();
  const sendLag = histogram();
  const intervalMs = 1000 / w.latencyRate;
  const warmup = Math.round(w.latencyRate * w.latencyWarmupSeconds);
  const total = warmup + Math.round(w.latencyRate * w.latencySeconds);
  let start = Infinity;
  let measureFrom = Infinity;
  let received = 0;
  let probed = false;
  /** [scheduled ms on {@link now}'s clock, µs], the slowest record of each moment, slowest first. */
  const worst: [number, number][] = [];

  const stopConsumer = await target.startConsumer((value, receivedAt = now()) => {
    const scheduled = value.readDoubleLE(0);
    if (scheduled === PROBE) {
      probed = true;
      return;
    }
    received++;
    if (scheduled < measureFrom) return;
    const us = Math.max(1, Math.round((receivedAt - scheduled) * 1000));
    latency.recordValue(us);
    noteWorst(worst, scheduled, us);
  });
  try {
    // The consumer is live once it receives a probe; only then does the schedule start.
    const probeUntil = now() + 15_000;
    while (!probed) {
      if (now() > probeUntil) throw new Error('the consumer received no probe record within 15 s');
      await target.send([valueAt(PROBE)]);
      await waitFor(() => probed, 250);
    }

    let sent = 0;
    let unacked = 0;
    let failure: unknown = null;
    const sendNow = (values: Buffer[]) => {
      unacked += values.length;
      target.send(values).then(
        () => (unacked -= values.length),
        (err: unknown) => {
          unacked -= values.length;
          failure ??= err;
        },
      );
    };
    start = now() + 1;
    measureFrom = start + warmup * intervalMs;
    await new Promise<void>((resolve) => {
      const tick = () => {
        const at = now();
        const due = Math.min(total, Math.floor((at - start) / intervalMs) + 1);
        if (due > sent && unacked < MAX_UNACKED_RECORDS && failure === null) {
          const values: Buffer[] = [];
          for (let i = sent; i < due; i++) {
            const scheduled = start + i * intervalMs;
            if (i >= warmup) sendLag.recordValue(Math.max(1, Math.round((at - scheduled) * 1000)));
            values.push(valueAt(scheduled));
          }
          sent = due;
          if (sending === 'record') for (const v of values) sendNow([v]);
          else for (let i = 0; i < values.length; i += MAX_RECORDS_PER_REQUEST) sendNow(values.slice(i, i + MAX_RECORDS_PER_REQUEST));
        }
        if (sent < total && failure === null) setTimeout(tick, 1);
        else resolve();
      };
      setTimeout(tick, Math.max(0, start - now()));
    });
    if (failure !== null) throw failure;
    const drained = await waitFor(() => received >= total, DRAIN_MS);
    return {
      drainMs: drained ? now() - (start + (total - 1) * intervalMs) : DRAIN_MS,
      p50Us: latency.getValueAtPercentile(50),
      p99Us: latency.getValueAtPercentile(99),
      p999Us: latency.getValueAtPercentile(99.9),
      maxUs: latency.maxValue,
      measured: latency.totalCount,
      missing: Math.max(0, total - received),
      sendLagP99Us: sendLag.getValueAtPercentile(99),
      sending,
      window: [toEpoch(measureFrom), toEpoch(start + (total - 1) * intervalMs)],
      worst: worst.map(([scheduled, us]) => [toEpoch(scheduled), us / 1000]),
    };
  } finally {
    await stopConsumer();
    latency.destroy();
    sendLag.destroy();
  }
}
