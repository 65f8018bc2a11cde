/**
 * Helpers of the limits-at-scale benchmarks (bench/scale/): a process's resident memory from /proc, latency
 * percentiles, a `onelog serve` child timed from spawn until it answers, and number formats.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import readline from 'node:readline';
import { BIN } from '../../test/helpers/processes.js';

/** `1234567` as `1,234,567`. */
export const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

/** Bytes as MB (10^6), one decimal. */
export const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);

/** A process's resident memory, bytes. */
export interface ResidentMemory {
  /** VmRSS: resident now. */
  rssBytes: number;
  /** VmHWM: the peak resident size since the process started or since {@link resetPeakRss}. */
  peakRssBytes: number;
}

/**
 * Reads VmRSS and VmHWM of process `pid` (default this one) from `/proc/PID/status` (Linux).
 * @throws if the file cannot be read (not Linux, the process is gone)
 */
export function residentMemory(pid: number | 'self' = 'self'): ResidentMemory {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rssBytes: kb('VmRSS'), peakRssBytes: kb('VmHWM') };
}

/**
 * Resets the peak resident size (VmHWM) of process `pid` to its current size (writes 5 to `/proc/PID/clear_refs`,
 * Linux 4.0+), so the next {@link residentMemory} gives the peak of what ran in between.
 * @returns false if the kernel refused (the peak then counts from the process's start)
 */
export function resetPeakRss(pid: number | 'self' = 'self'): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** The open-files soft limit of process `pid` (`Max open files` in /proc/PID/limits); Infinity when unlimited. */
export function openFilesLimitOf(pid: number | 'self'): number {
  const line = fs.readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  return soft === 'unlimited' ? Infinity : Number(soft);
}

/** Descriptors process `pid` holds open now (entries of /proc/PID/fd). */
export function openDescriptors(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

/** The `q`-quantile (0..1) of `values` sorted ascending (nearest rank); NaN when empty. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** `p50 X ms, p99 Y ms, max Z ms (N samples)` of latencies in ms. */
export function latencyLine(ms: readonly number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const f = (v: number) => v.toFixed(v < 10 ? 2 : 1);
  return `p50 ${f(quantile(sorted, 0.5))} ms, p99 ${f(quantile(sorted, 0.99))} ms, max ${f(sorted.at(-1) ?? NaN)} ms (${fmt(sorted.length)} samples)`;
}

/** A `onelog serve` child started by {@link spawnServer}. */
export interface TimedServer {
  url: string;
  proc: ChildProcess;
  /** From spawn until it logged `onelog is listening`, ms. */
  startMs: number;
  /** What it logged as `opened the log store` (partitions, recovered, ms, ...). */
  logStore: Record<string, unknown>;
  /** Every log line it printed (JSON) until now. */
  logs: Array<Record<string, unknown>>;
  /** Sends `signal` and resolves with the time until the process exited, ms. */
  stop(signal?: NodeJS.Signals): Promise<number>;
}

/**
 * Spawns `node bin/onelog.js serve --data-dir DIR --port 0 ...args` (JSON logs) and resolves once it logs
 * `onelog is listening`, with the time from spawn to then. Node's own start and module loading are in it, as
 * they are in any restart.
 * @param openFilesLimit run it under `ulimit -n N` (soft and hard)
 */
export function spawnServer(dataDir: string, args: string[] = [], openFilesLimit?: number): Promise<TimedServer> {
  const argv = [BIN, 'serve', '--data-dir', dataDir, '--port', '0', '--log-format', 'json', ...args];
  const started = performance.now();
  const proc = openFilesLimit === undefined
    ? spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn('/bin/sh', ['-c', `ulimit -n ${openFilesLimit} && exec "$0" "$@"`, process.execPath, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const logs: Array<Record<string, unknown>> = [];
  let logStore: Record<string, unknown> = {};
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      logs.push(entry);
      if (entry.msg === 'opened the log store') logStore = entry;
      if (entry.msg === 'onelog is listening' && typeof entry.url === 'string') {
        resolve({
          url: entry.url, proc, startMs: performance.now() - started, logStore, logs,
          stop: async (signal = 'SIGTERM') => {
            const t = performance.now();
            if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
            await exited;
            return performance.now() - t;
          },
        });
      }
    });
    proc.once('exit', (code) => reject(new Error(`onelog serve exited with ${code} before listening: ${stderr}`)));
  });
}
