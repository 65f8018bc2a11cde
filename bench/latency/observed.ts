/**
 * `npx tsx bench/latency/observed.ts DIR`: what a latency run observed (`--latency-observe DIR`, see observe.mjs), per
 * process (GC pauses by kind, event-loop delay, stalls), then for each row's slowest records what any process was
 * doing then: the GC pauses and stalls that overlap the record's way from its scheduled send to its receipt.
 */
import fs from 'node:fs';
import path from 'node:path';

/** What observe.mjs writes per process. */
interface Observed {
  pid: number;
  command: string;
  gcs: [number, number, number][];
  stalls: [number, number][];
  delay: { percentiles: Record<string, number>; max: number; mean: number };
}

/** What bench/latency-modes.ts writes beside them (`rows.json`). */
interface ObservedRow {
  name: string;
  window: [number, number];
  worst: [number, number][];
}

const GC_KINDS: Record<number, string> = { 1: 'minor', 2: 'major', 4: 'incremental', 8: 'weak callbacks' };
const fixed = (n: number) => n.toFixed(1);

/** Prints the summary of DIR. */
export function printObserved(dir: string): void {
  const processes = fs.readdirSync(dir).filter((f) => /^\d+\.json$/.test(f))
    .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as Observed);
  console.log('\n| process | GC pauses by kind: count, total ms, max ms | pauses >= 5 ms | event-loop delay p99 / max ms | stalls > 15 ms (max ms) |');
  console.log('| --- | --- | ---: | --- | --- |');
  for (const p of processes) {
    const kinds = [...new Set(p.gcs.map(([, , kind]) => kind))].sort().map((kind) => {
      const of = p.gcs.filter(([, , k]) => k === kind).map(([, d]) => d);
      return `${GC_KINDS[kind] ?? kind} ${of.length}, ${fixed(of.reduce((a, b) => a + b, 0))}, ${fixed(Math.max(...of))}`;
    }).join('; ');
    const long = p.gcs.filter(([, d]) => d >= 5).length;
    const stallMax = p.stalls.length === 0 ? 0 : Math.max(...p.stalls.map(([, late]) => late));
    console.log(`| ${p.pid} ${p.command} | ${kinds || 'none'} | ${long} | ${fixed(p.delay.percentiles['99']! / 1e6)} / ${fixed(p.delay.max / 1e6)} | ` +
      `${p.stalls.length} (${fixed(stallMax)}) |`);
  }
  const rowsFile = path.join(dir, 'rows.json');
  if (!fs.existsSync(rowsFile)) return;
  for (const row of JSON.parse(fs.readFileSync(rowsFile, 'utf8')) as ObservedRow[]) {
    console.log(`\n${row.name}: the 5 slowest moments and what overlapped them (pid: GC kind/stall, ms)`);
    for (const [at, ms] of row.worst.slice(0, 5)) {
      const overlapping = processes.flatMap((p) => [
        ...p.gcs.filter(([start, d]) => start < at + ms && start + d > at && d >= 1).map(([, d, kind]) => `${p.pid}: GC ${GC_KINDS[kind] ?? kind} ${fixed(d)}`),
        ...p.stalls.filter(([due, late]) => due < at + ms && due + late > at).map(([, late]) => `${p.pid}: stall ${fixed(late)}`),
      ]);
      console.log(`  ${new Date(at).toISOString().slice(11, 23)} ${fixed(ms)} ms: ${overlapping.join(', ') || 'nothing observed'}`);
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printObserved(process.argv[2]!);
