/**
 * Child processes for the consumer-group tests (fixtures under test/fixtures/ that import dist/, so
 * `npm run build` first): spawn with a JSON config, read their stdout lines, wait for a line or a condition
 * with a deadline. Every child still running after a test is SIGKILLed.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { afterEach, expect } from 'vitest';
import type { HttpApi } from '../../src/client/index.js';
import type { GroupDescription } from '../../src/protocol/groups.js';

export const FIXTURES = path.resolve(import.meta.dirname, '../fixtures');

/** A running fixture process. */
export interface Child {
  proc: ChildProcess;
  /** Every stdout line so far. */
  lines: string[];
  /** Resolves when the process ended: its exit code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first line (already printed or to come) that `match` accepts; rejects after `timeoutMs` or on exit. */
  line(match: (line: string) => boolean, what: string, timeoutMs?: number): Promise<string>;
  /** The member id it printed last (`member ID`), or ''. */
  memberId(): string;
}

const live = new Set<ChildProcess>();
afterEach(() => {
  for (const proc of live) proc.kill('SIGKILL');
  live.clear();
});

/** Starts `node test/fixtures/SCRIPT '<config as JSON>'`; stderr goes to the test's stderr. */
export function startChild(script: string, config: unknown): Child {
  const proc = spawn(process.execPath, [path.join(FIXTURES, script), JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'inherit'] });
  live.add(proc);
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  readline.createInterface({ input: proc.stdout! }).on('line', (l) => {
    lines.push(l);
    for (const w of waiters) w();
  });
  let ended = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    // 'close': stdout is fully read too.
    proc.once('close', (code, signal) => {
      live.delete(proc);
      ended = true;
      for (const w of waiters) w();
      resolve({ code, signal });
    }));
  const line = (match: (l: string) => boolean, what: string, timeoutMs = 15_000) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const found = lines.find(match);
        if (found !== undefined || ended) {
          clearTimeout(timer);
          waiters.delete(check);
          if (found !== undefined) resolve(found);
          else reject(new Error(`child ${script} exited before printing ${what}; it printed:\n${lines.join('\n')}`));
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`no ${what} from child ${script} within ${timeoutMs} ms; it printed:\n${lines.join('\n')}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  const memberId = () => lines.filter((l) => l.startsWith('member ')).at(-1)?.slice('member '.length) ?? '';
  return { proc, lines, exited, line, memberId };
}

/** Polls `probe` every `intervalMs` until it returns something other than undefined/false; fails after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** `partition:offset` lines a fixture appended to `file` (none if it does not exist). */
export function processedRecords(file: string): Array<{ partition: number; offset: number }> {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => {
    const [partition, offset] = l.split(':').map(Number);
    return { partition: partition!, offset: offset! };
  });
}

/** Waits until every partition's committed offset equals its high watermark (the group's first topic). */
export function waitForAllCommitted(api: HttpApi, groupId: string, timeoutMs = 20_000): Promise<GroupDescription> {
  return waitFor(`group ${groupId} committed up to every high watermark`, async () => {
    const d = await api.describeGroup(groupId);
    return d.subscriptions[0]!.partitions.every((p) => p.committedOffset === p.highWatermark) && d;
  }, timeoutMs);
}

/** SIGTERMs a child and checks it stopped cleanly (run() resolved, exit code 0). */
export async function stopCleanly(child: Child): Promise<void> {
  child.proc.kill('SIGTERM');
  const { code, signal } = await child.exited;
  expect({ code, signal, lines: child.lines.filter((l) => !l.startsWith('member ')) }).toMatchObject({ code: 0, signal: null });
  expect(child.lines).toContain('stopped');
}
