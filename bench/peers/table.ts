/**
 * The side-by-side tables of the peer benchmarks (one per metric, one row per system and durability
 * setting) and the issue's targets, judged met / not met from the figures of this run.
 */
import type { PeerResult, Throughput } from './common.js';
import { MB } from './common.js';

/** The rows, by role; a system that could not run is null. */
export interface PeerRows {
  onelogInterval: PeerResult | null;
  onelogAlways: PeerResult | null;
  redisEverysec: PeerResult | null;
  redisAlways: PeerResult | null;
  jetstream: PeerResult | null;
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

function throughputTable(title: string, results: PeerResult[], sizes: number[], pick: (r: PeerResult) => Map<number, Throughput>): void {
  const header = ['system', ...sizes.flatMap((s) => [`${s} B records/s`, `${s} B MB/s`])];
  const rows = results.map((r) => [r.name, ...sizes.flatMap((s) => {
    const t = pick(r).get(s);
    return t ? [int(perSecond(t)), (t.bytes / t.seconds / MB).toFixed(1)] : ['-', '-'];
  })]);
  printTable(title, header, rows);
}

export function printTables(results: PeerResult[], sizes: number[], latencyRate: number, latencyRecordBytes: number): void {
  console.log('\n== side by side ==');
  const w = Math.max(...results.map((r) => r.name.length));
  console.log('durability of an acknowledged write:');
  for (const r of results) console.log(`  ${r.name.padEnd(w)}  ${r.durability}`);
  throughputTable('produce throughput', results, sizes, (r) => r.produce);
  throughputTable('consume throughput (consumer group / XREADGROUP + XACK / pull consumer, acknowledged per batch)', results, sizes, (r) => r.consume);
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

function ratioVerdict(target: string, factor: number, a: PeerResult | null, b: PeerResult | null, figure: (r: PeerResult) => Throughput | undefined): Verdict {
  const x = a && figure(a);
  const y = b && figure(b);
  if (!x || !y || !a || !b) return { target, measured: 'not measured', met: null };
  const ratio = perSecond(x) / perSecond(y);
  return { target, measured: `${ratio.toFixed(2)}x (${int(perSecond(x))} vs ${int(perSecond(y))} records/s)`, met: ratio >= factor };
}

/** The issue's targets on this machine, each judged from this run's figures. */
export function printTargets(rows: PeerRows, sizes: number[], latencyRate: number, p99TargetMs = 2): void {
  const verdicts: Verdict[] = [];
  for (const size of sizes) {
    verdicts.push(ratioVerdict(`produce ${size} B: onelog interval >= 1.3x Redis everysec`, 1.3, rows.onelogInterval, rows.redisEverysec, (r) => r.produce.get(size)));
    verdicts.push(ratioVerdict(`produce ${size} B: onelog always >= 1.3x Redis always`, 1.3, rows.onelogAlways, rows.redisAlways, (r) => r.produce.get(size)));
    verdicts.push(ratioVerdict(`produce ${size} B: onelog interval >= 3x JetStream file`, 3, rows.onelogInterval, rows.jetstream, (r) => r.produce.get(size)));
  }
  for (const size of sizes) {
    verdicts.push(ratioVerdict(`consume ${size} B: onelog interval >= 2x Redis everysec`, 2, rows.onelogInterval, rows.redisEverysec, (r) => r.consume.get(size)));
    verdicts.push(ratioVerdict(`consume ${size} B: onelog always >= 2x Redis always`, 2, rows.onelogAlways, rows.redisAlways, (r) => r.consume.get(size)));
  }
  for (const r of [rows.onelogInterval, rows.onelogAlways]) {
    if (!r) continue;
    const target = `p99 at ${latencyRate.toLocaleString('en-US')}/s: ${r.name} <= ${p99TargetMs} ms`;
    const l = r.latency;
    verdicts.push(l
      ? { target, measured: `${ms(l.p99Us)} ms${l.missing ? ` (${l.missing} records missing)` : ''}`, met: l.p99Us <= p99TargetMs * 1000 && l.missing === 0 }
      : { target, measured: 'not measured', met: null });
  }
  printTable('targets (issue 5): met / not met in this run', ['target', 'measured', 'verdict'],
    verdicts.map((v) => [v.target, v.measured, v.met === null ? 'n/a' : v.met ? 'met' : 'NOT MET']), 3);
  console.log('note: JetStream syncs less often than either onelog policy (no fsync per message), so "equal durability" ' +
    'with it is approximate: onelog interval is the nearest, and is still the more durable of the two.');
}
