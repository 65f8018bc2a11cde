/**
 * `npx tsx bench/latency/profiles.ts DIR`: the CPU profiles of a latency run (`--latency-cpu-prof DIR`, `.cpuprofile`
 * files: open one in Chrome DevTools' Performance panel for its flame chart), each summarised by the functions with
 * the most self time, idle and GC included: what each process spent its time on.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The parts of V8's profile format read here. */
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  samples: number[];
  timeDeltas: number[];
}

/** Functions listed per profile. */
const TOP = 12;

/** Self time per function (`name file:line`), µs, heaviest first. */
export function selfTimes(profile: CpuProfile): Array<[string, number]> {
  const bySample = new Map<number, number>();
  profile.samples.forEach((id, i) => bySample.set(id, (bySample.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byFunction = new Map<string, number>();
  for (const { id, callFrame: f } of profile.nodes) {
    const where = f.url === '' ? '' : ` ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
    const key = `${f.functionName || '(anonymous)'}${where}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + (bySample.get(id) ?? 0));
  }
  return [...byFunction].sort((a, b) => b[1] - a[1]);
}

/** Prints each profile in `dir` with its heaviest functions by self time. */
export function printProfiles(dir: string): void {
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
    const times = selfTimes(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as CpuProfile);
    const total = times.reduce((sum, [, us]) => sum + us, 0);
    console.log(`\n${file}: ${(total / 1e6).toFixed(1)} s sampled`);
    for (const [name, us] of times.slice(0, TOP)) console.log(`  ${(us / 1000).toFixed(0).padStart(7)} ms ${(100 * us / total).toFixed(1).padStart(5)}%  ${name}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printProfiles(process.argv[2]!);
