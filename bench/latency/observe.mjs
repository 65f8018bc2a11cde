/**
 * What stops a process's event loop during a latency run (`npm run bench -- --only latency-modes --latency-observe
 * DIR`): preloaded with `NODE_OPTIONS=--import <this file>` in the broker and the consumer processes, imported by the
 * harness, it records while `ONELOG_OBSERVE_DIR` names a directory:
 * - every GC pause (PerformanceObserver 'gc': start in epoch ms, duration ms, kind: 1 minor/scavenge, 2 major
 *   mark-compact, 4 incremental marking, 8 weak callbacks);
 * - the event loop's delay (monitorEventLoopDelay, 10 ms resolution: its percentiles, ns);
 * - stalls: a 5 ms timer that fired more than 15 ms late, with when (epoch ms, the clock every process reads alike).
 * At exit it writes them to `DIR/<pid>.json` with the process's command line. Plain JavaScript: the broker runs the
 * built CLI, without tsx.
 */
import fs from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { setInterval } from 'node:timers';

const dir = process.env.ONELOG_OBSERVE_DIR;
if (dir) {
  /** [start epoch ms, duration ms, kind] */
  const gcs = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push([performance.timeOrigin + e.startTime, e.duration, e.detail?.kind ?? 0]);
  }).observe({ entryTypes: ['gc'] });
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  /** [epoch ms when the late timer was due, ms late] */
  const stalls = [];
  let due = Date.now() + 5;
  setInterval(() => {
    const now = Date.now();
    if (now - due > 15) stalls.push([due, now - due]);
    due = now + 5;
  }, 5).unref();
  process.on('exit', () => {
    delay.disable();
    const percentiles = Object.fromEntries([50, 99, 99.9].map((p) => [p, delay.percentile(p)]));
    fs.writeFileSync(path.join(dir, `${process.pid}.json`), JSON.stringify({
      pid: process.pid,
      command: process.argv.slice(1).map((a) => path.basename(a)).join(' ').slice(0, 120),
      gcs, stalls, delay: { percentiles, max: delay.max, mean: delay.mean },
    }));
  });
}
