/**
 * The side-by-side tables of the peer benchmarks (one per metric, one row per system and durability
 * setting) and the issue's targets, judged met / not met from the figures of this run.
 */
import type { PeerResult, Throughput } from './common.js';
import { MB } from './common.js';

/** The rows, by role; a system that could not run is null. Redis and JetStream each have a best path and one driven as onelog's client is. */
export interface PeerRows {
  onelogInterval: PeerResult | null;
  onelogAlways: PeerResult | null;
  redisEverysec: { client: PeerResult; best: PeerResult } | null;
  redisAlways: { client: PeerResult; best: PeerResult } | null;
  jetstream: { client: PeerResult; best: PeerResult } | null;
}

/** Every row in table order: onelog, then each peer's best path before its like-for-like path. */
export function rowsInOrder(rows: PeerRows): PeerResult[] {
  return [rows.onelogInterval, rows.onelogAlways, rows.redisEverysec?.best, rows.redisEverysec?.client, rows.redisAlways?.best, rows.redisAlways?.client,
    rows.jetstream?.best, rows.jetstream?.client].filter((r): r is PeerResult => r !== null && r !== undefined);
}

const perSecond = (t: Throughput) => t.records / t.seconds;
const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (us: number) => (us / 1000).toFixed(2);

/** Prints a table: the first `textColumns` columns left-aligned, the rest (figures) right-aligned. */
function printTable(title: string, header: string[], rows: string[][], textColumns = 1): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i < textColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  console.log(`\n${title}`);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

function throughputTable(title: string, results: Array<{ name: string; figures: Map<number, Throughput> }>, sizes: number[]): void {
  const header = ['system', ...sizes.flatMap((s) => [`${s} B records/s`, `${s} B MB/s`])];
  const rows = results.map((r) => [r.name, ...sizes.flatMap((s) => {
    const t = r.figures.get(s);
    return t ? [int(perSecond(t)), (t.bytes / t.seconds / MB).toFixed(1)] : ['-', '-'];
  })]);
  printTable(title, header, rows);
}

export function printTables(results: PeerResult[], sizes: number[], latencyRate: number, latencyRecordBytes: number): void {
  console.log('\n== side by side ==');
  const w = Math.max(...results.map((r) => r.name.length));
  console.log('durability of an acknowledged write:');
  for (const r of results) console.log(`  ${r.name.padEnd(w)}  ${r.durability}`);
  throughputTable('produce throughput (onelog: on a freshly started broker, then again warm)', results.flatMap((r) => [
    { name: r.name, figures: r.produce }, ...(r.produceWarm.size > 0 ? [{ name: `${r.name}, warm`, figures: r.produceWarm }] : []),
  ]), sizes);
  throughputTable('consume throughput (consumer group / XREADGROUP + XACK / pull consumer, acknowledged per batch)',
    results.map((r) => ({ name: r.name, figures: r.consume })), sizes);
  const measuredCpu = results.filter((r) => r.serverCpu.produce.size + r.serverCpu.consume.size > 0);
  if (measuredCpu.length > 0) {
    printTable('broker CPU (user + system) per record, µs (warm produce; consume)', ['system', ...sizes.flatMap((s) => [`produce ${s} B`, `consume ${s} B`])],
      measuredCpu.map((r) => [r.name, ...sizes.flatMap((s) => [r.serverCpu.produce.get(s), r.serverCpu.consume.get(s)].map((us) => (us === undefined ? '-' : us.toFixed(2))))]));
  }
  printTable(`end-to-end latency at ${latencyRate.toLocaleString('en-US')} records/s of ${latencyRecordBytes} B, from the scheduled send time, ms`,
    ['system', 'p50', 'p99', 'p99.9', 'max', 'records', 'missing', 'send lag p99', 'sending'],
    results.map((r) => {
      const l = r.latency;
      return l
        ? [r.name, ms(l.p50Us), ms(l.p99Us), ms(l.p999Us), ms(l.maxUs), int(l.measured), int(l.missing), ms(l.sendLagP99Us), `per ${l.sending}`]
        : [r.name, '-', '-', '-', '-', '-', '-', '-', '-'];
    }));
  for (const r of results) for (const e of r.errors) console.log(`  ${r.name}: FAILED ${e}`);
}

interface Verdict {
  target: string;
  measured: string;
  met: boolean | null;
}

function ratioVerdict(target: string, factor: number, a: PeerResult | null | undefined, b: PeerResult | null | undefined, figure: (r: PeerResult) => Throughput | undefined): Verdict {
  const x = a && figure(a);
  const y = b && figure(b);
  if (!x || !y || !a || !b) return { target, measured: 'not measured', met: null };
  const ratio = perSecond(x) / perSecond(y);
  return { target, measured: `${ratio.toFixed(2)}x (${int(perSecond(x))} vs ${int(perSecond(y))} records/s)`, met: ratio >= factor };
}

function rateVerdict(target: string, floor: number, t: Throughput | undefined): Verdict {
  return t ? { target, measured: `${int(perSecond(t))} records/s`, met: perSecond(t) >= floor } : { target, measured: 'not measured', met: null };
}

function cpuVerdict(target: string, ceilingUs: number, us: number | undefined): Verdict {
  return us === undefined ? { target, measured: 'not measured', met: null } : { target, measured: `${us.toFixed(2)} µs`, met: us <= ceilingUs };
}

/** The slower of a fresh and a warm run: a target holds for both. */
function slower(r: PeerResult, size: number): Throughput | undefined {
  const runs = [r.produce.get(size), r.produceWarm.get(size)].filter((t): t is Throughput => t !== undefined);
  return runs.sort((x, y) => perSecond(x) - perSecond(y))[0];
}

/**
 * The issue's targets on this machine, each judged from this run's figures against the peers' best paths;
 * not judged when the machine's 1-minute load average was above `maxLoad` at the start (other work would
 * decide the verdicts).
 */
export function printTargets(rows: PeerRows, sizes: number[], latencyRate: number, loadAtStart: number, maxLoad = 1.5): void {
  const verdicts: Verdict[] = [];
  const small = sizes.includes(100) ? 100 : sizes[0]!;
  const large = sizes.includes(1024) ? 1024 : sizes.at(-1)!;
  const { onelogInterval, onelogAlways } = rows;
  verdicts.push(ratioVerdict(`produce ${small} B: onelog interval >= 1.3x Redis everysec (best path)`, 1.3, onelogInterval, rows.redisEverysec?.best, (r) => slower(r, small)));
  verdicts.push(ratioVerdict(`produce ${small} B: onelog always >= 1.3x Redis always (best path)`, 1.3, onelogAlways, rows.redisAlways?.best, (r) => slower(r, small)));
  verdicts.push(ratioVerdict(`produce ${small} B: onelog interval >= 3x JetStream (best path)`, 3, onelogInterval, rows.jetstream?.best, (r) => slower(r, small)));
  verdicts.push(rateVerdict(`produce ${large} B: onelog interval >= 500,000 records/s`, 500_000, onelogInterval ? slower(onelogInterval, large) : undefined));
  for (const size of sizes) verdicts.push(rateVerdict(`consume ${size} B: onelog interval >= 1,000,000 records/s`, 1_000_000, onelogInterval?.consume.get(size)));
  for (const size of sizes) {
    verdicts.push(ratioVerdict(`consume ${size} B: onelog interval >= 2x Redis everysec (best path)`, 2, onelogInterval, rows.redisEverysec?.best, (r) => r.consume.get(size)));
  }
  verdicts.push(cpuVerdict(`broker CPU per produced record (${small} B, interval) <= 2 µs`, 2, onelogInterval?.serverCpu.produce.get(small)));
  verdicts.push(cpuVerdict(`broker CPU per consumed record (${small} B, interval) <= 1 µs`, 1, onelogInterval?.serverCpu.consume.get(small)));
  for (const r of [onelogInterval, onelogAlways]) {
    if (!r) continue;
    const l = r.latency;
    const missing = l?.missing ? ` (${l.missing} records missing)` : '';
    verdicts.push(l
      ? { target: `p99 at ${latencyRate.toLocaleString('en-US')}/s: ${r.name} <= 2 ms`, measured: `${ms(l.p99Us)} ms${missing}`, met: l.p99Us <= 2000 && l.missing === 0 }
      : { target: `p99 at ${latencyRate.toLocaleString('en-US')}/s: ${r.name} <= 2 ms`, measured: 'not measured', met: null });
    verdicts.push(l
      ? { target: `p99.9 at ${latencyRate.toLocaleString('en-US')}/s: ${r.name} <= 5 ms`, measured: `${ms(l.p999Us)} ms${missing}`, met: l.p999Us <= 5000 && l.missing === 0 }
      : { target: `p99.9 at ${latencyRate.toLocaleString('en-US')}/s: ${r.name} <= 5 ms`, measured: 'not measured', met: null });
  }
  const judged = loadAtStart <= maxLoad;
  printTable(`targets (issue 14)${judged ? ': met / not met in this run' : `: NOT JUDGED, the load average was ${loadAtStart.toFixed(2)} (above ${maxLoad}) at the start`}`,
    ['target', 'measured', 'verdict'],
    verdicts.map((v) => [v.target, v.measured, !judged ? 'not judged' : v.met === null ? 'n/a' : v.met ? 'met' : 'NOT MET']), 3);
  console.log('note: JetStream syncs less often than either onelog policy (no fsync per message), so "equal durability" ' +
    'with it is approximate: onelog interval is the nearest, and is still the more durable of the two.');
}
