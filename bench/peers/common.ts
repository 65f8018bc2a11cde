/**
 * What the peer benchmarks share: the workload every system runs, the figures each returns, the batch
 * driver (N records per request, K requests in flight) and the record values (the first 8 bytes carry the
 * record's scheduled send time for the latency run).
 */
import fs from 'node:fs';
import os from 'node:os';

/** The workload, the same for every system. */
export interface PeerWorkload {
  /** Records per throughput run (each record size produces this many, then consumes them). */
  records: number;
  /** Value sizes of the throughput runs, bytes. */
  recordSizes: number[];
  /** Records per produce request / pipeline / ack batch, and most records per fetch. */
  batchRecords: number;
  /** Produce requests (batches) in flight at once. */
  inFlight: number;
  /** Latency run: records per second, sent on a fixed schedule. */
  latencyRate: number;
  /** Latency run: measured seconds (after the warm-up). */
  latencySeconds: number;
  /** Latency run: seconds at the same rate before measuring, not recorded. */
  latencyWarmupSeconds: number;
  /** Latency run: value size, bytes (at least 8: the scheduled time travels in the first 8). */
  latencyRecordBytes: number;
}

/** Bytes of values a consumer reads per fetch in the consume runs: 1 MiB, Kafka's `max.partition.fetch.bytes` default. */
export const FETCH_BYTES = 1024 * 1024;

/**
 * Records per fetch (XREADGROUP COUNT, JetStream pull) in the consume runs, for values of `size` bytes: as many
 * whole produced batches (`batchRecords`) as fill {@link FETCH_BYTES}, at least one; each system acknowledges
 * (commits) once per fetch. Whole batches: onelog answers stored batches whole, and its client drops what is
 * past `maxRecords` (fetched again next time), so a count that cuts a batch would read it twice.
 */
export function recordsPerFetch(w: Pick<PeerWorkload, 'batchRecords'>, size: number): number {
  return Math.max(1, Math.floor(FETCH_BYTES / size / w.batchRecords)) * w.batchRecords;
}

/** One throughput measurement. */
export interface Throughput {
  records: number;
  bytes: number;
  seconds: number;
}

/** One latency run: end-to-end latency from each record's scheduled send time to its receipt, µs. */
export interface Latency {
  p50Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
  /** Records measured (the warm-up excluded). */
  measured: number;
  /** Records sent and never received within the drain time. */
  missing: number;
  /** p99 of (actual send time - scheduled time), µs: how late the harness itself sent (timer, event loop, back-pressure). */
  sendLagP99Us: number;
  /** From the last record's scheduled time to the receipt of the last record, ms: the backlog left when sending ended. */
  drainMs: number;
  /** Records sent per request: 'tick' (every record due in a 1 ms tick in one request) or 'record' (one per request). */
  sending: string;
  /** The measured run's start and end, epoch ms: to find what other processes did meanwhile (bench/latency/observed.ts). */
  window: [number, number];
  /** The slowest moments (the slowest record of each 50 ms), slowest first: [scheduled send time in epoch ms, latency ms]. */
  worst: [number, number][];
}

/** What one system (one row of the tables) measured; a failed part leaves its figure out and says why. */
export interface PeerResult {
  /** Row name, e.g. `onelog (flush interval)`. */
  name: string;
  /** Durability of an acknowledged write, one line. */
  durability: string;
  produce: Map<number, Throughput>;
  consume: Map<number, Throughput>;
  latency: Latency | null;
  /** Produce again on the same (warm) server, by record size; onelog's rows only. */
  produceWarm: Map<number, Throughput>;
  /** The server's CPU time (user + system) per record, µs, by record size; where the server is a child of this run. */
  serverCpu: { produce: Map<number, number>; consume: Map<number, number> };
  errors: string[];
}

export function emptyResult(name: string, durability: string): PeerResult {
  return { name, durability, produce: new Map(), consume: new Map(), latency: null, produceWarm: new Map(), serverCpu: { produce: new Map(), consume: new Map() }, errors: [] };
}

/** CPU time (user + system) process `pid` used so far, ms (Linux /proc, 10 ms ticks); null where it cannot be read. */
export function processCpuMs(pid: number | undefined): number | null {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command name.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/** Runs `part`, storing its error message in `result.errors` instead of ending the whole benchmark. */
export async function attempt(result: PeerResult, what: string, part: () => Promise<void>): Promise<void> {
  try {
    await part();
  } catch (err) {
    const message = `${what}: ${(err as Error).message ?? String(err)}`;
    result.errors.push(message);
    console.log(`  FAILED ${message}`);
  }
}

export const MB = 1e6;

export function formatThroughput(t: Throughput): string {
  return `${Math.round(t.records / t.seconds).toLocaleString('en-US')} records/s, ${(t.bytes / t.seconds / MB).toFixed(1)} MB/s ` +
    `(${t.records.toLocaleString('en-US')} in ${t.seconds.toFixed(2)} s)`;
}

export function formatLatency(l: Latency): string {
  const ms = (us: number) => (us / 1000).toFixed(2);
  return `p50 ${ms(l.p50Us)} ms, p99 ${ms(l.p99Us)} ms, p99.9 ${ms(l.p999Us)} ms, max ${ms(l.maxUs)} ms ` +
    `(${l.measured.toLocaleString('en-US')} records${l.missing ? `, ${l.missing} MISSING` : ''}; harness send lag p99 ${ms(l.sendLagP99Us)} ms)`;
}

/** The 1-minute load average: other work on the machine moves every figure, so each section prints it. */
export function loadAverage(): string {
  return `load average ${os.loadavg()[0]!.toFixed(2)}`;
}

export function machineLine(): string {
  const cpus = os.cpus();
  const gib = (n: number) => (n / 2 ** 30).toFixed(1);
  return `machine: ${cpus.length} x ${cpus[0]?.model ?? 'cpu'}, ${gib(os.totalmem())} GiB memory (${gib(os.freemem())} free), ` +
    `${os.type()} ${os.release()}, node ${process.version}; ${loadAverage()}`;
}

/**
 * Produces `total` records as batches of `batchRecords`, `inFlight` batches at once: `sendBatch(n)` sends n
 * records and resolves once the system acknowledged them. Returns the elapsed time.
 */
export async function driveBatches(total: number, batchRecords: number, inFlight: number, sendBatch: (n: number) => Promise<void>): Promise<number> {
  let sent = 0;
  const started = performance.now();
  const worker = async () => {
    while (sent < total) {
      const n = Math.min(batchRecords, total - sent);
      sent += n;
      await sendBatch(n);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return (performance.now() - started) / 1000;
}

/** A value of `bytes` (filler that does not compress to nothing: letters in turn). */
export function fillerValue(bytes: number): Buffer {
  const value = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) value[i] = 97 + (i % 26);
  return value;
}

/** Waits until `done()` or `timeoutMs` passed, polling every `everyMs`; answers whether it was done. */
export async function waitFor(done: () => boolean, timeoutMs: number, everyMs = 5): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return true;
}
