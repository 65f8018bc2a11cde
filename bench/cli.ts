/**
 * `npm run bench -- --only cli`: what a new user's first commands cost, against a `onelog serve` child on a fresh data
 * directory. Three tables:
 *
 * - command start-up: each command's wall time (best and median of `--cli-runs` runs, process start to exit) and its
 *   ratio to `node -e 0` in the same run (issue 32's target: `topics list` under 3x);
 * - a consumer's first record: `consume --max-records 1` of a group with 0, 2 and 5 retry tiers (target: within 1.2x
 *   of the group without tiers);
 * - records/s of `onelog produce` of the S&P 500 file (619,040 CSV rows, keyed by ticker, 4 partitions) and of
 *   `onelog consume` of them to a file, both over the process's whole wall time, start-up included (target 300,000).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN } from '../test/helpers/processes.js';
import { fmt, spawnServer } from './scale/common.js';

const SP500 = path.resolve(import.meta.dirname, '../examples/data/sp500-daily-2013-2018.csv.gz');
const SP500_ROWS = 619_040;

/** Runs `node ARGS` with ONELOG_URL set and stdout to `stdoutFile` (else ignored); resolves with its wall time, ms. */
function timed(args: string[], url: string, stdoutFile?: string): Promise<number> {
  const out = stdoutFile === undefined ? 'ignore' : fs.openSync(stdoutFile, 'w');
  const started = performance.now();
  const proc = spawn(process.execPath, args, { env: { ...process.env, ONELOG_URL: url }, stdio: ['ignore', out, 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => proc.once('close', (code) => {
    if (typeof out === 'number') fs.closeSync(out);
    if (code === 0) resolve(performance.now() - started);
    else reject(new Error(`node ${args.join(' ')} exited ${code}: ${stderr}`));
  }));
}

/** Best and median of `runs` runs of `args`, ms. */
async function bestAndMedian(args: string[], url: string, runs: number): Promise<{ best: number; median: number }> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await timed(args, url));
  times.sort((a, b) => a - b);
  return { best: times[0]!, median: times[Math.floor(times.length / 2)]! };
}

const cli = (...args: string[]) => [BIN, ...args];

export async function cliBenchmark(options: { runs: number }): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-bench-cli-'));
  const server = await spawnServer(dataDir);
  const { url } = server;
  try {
    console.log(`\n## CLI (issue 32): a onelog serve child on ${dataDir}, ${os.cpus().length} CPUs, Node ${process.version}`);
    await timed(cli('topics', 'create', 'prices', '--partitions', '4'), url);

    console.log(`\ncommand start-up, ${options.runs} runs each (process start to exit, ms)\n`);
    console.log('| command | best | median | best / node -e 0 |\n| --- | --- | --- | --- |');
    const node = await bestAndMedian(['-e', '0'], url, options.runs);
    console.log(`| node -e 0 | ${node.best.toFixed(0)} | ${node.median.toFixed(0)} | 1.00 |`);
    for (const args of [['--version'], ['topics', 'list'], ['topics', 'describe', 'prices'], ['groups', 'list']]) {
      const t = await bestAndMedian(cli(...args), url, options.runs);
      console.log(`| onelog ${args.join(' ')} | ${t.best.toFixed(0)} | ${t.median.toFixed(0)} | ${(t.best / node.best).toFixed(2)} |`);
    }

    console.log(`\nproduce and consume of ${path.basename(SP500)} (${fmt(SP500_ROWS)} rows, key Name, 4 partitions), whole process\n`);
    console.log('| command | wall s | records/s |\n| --- | --- | --- |');
    const produced = await timed(cli('produce', 'prices', '--file', SP500, '--key-field', 'Name'), url);
    console.log(`| onelog produce | ${(produced / 1000).toFixed(2)} | ${fmt(SP500_ROWS / (produced / 1000))} |`);
    await timed(cli('groups', 'create', 'reader', '--topic', 'prices', '--start', 'earliest'), url);
    const outFile = path.join(dataDir, 'consumed.ndjson');
    const consumed = await timed(cli('consume', 'prices', '--group', 'reader', '--max-records', String(SP500_ROWS)), url, outFile);
    const lines = fs.readFileSync(outFile, 'utf8').split('\n').length - 1;
    if (lines !== SP500_ROWS) throw new Error(`consume printed ${lines} lines, expected ${SP500_ROWS}`);
    console.log(`| onelog consume > file | ${(consumed / 1000).toFixed(2)} | ${fmt(SP500_ROWS / (consumed / 1000))} |`);

    console.log(`\na new group's first record: consume --max-records 1, best of ${options.runs} groups each (ms)\n`);
    console.log('| retry tiers | best | median | best / no tiers |\n| --- | --- | --- | --- |');
    let without = NaN;
    for (const tiers of [0, 2, 5]) {
      const times: number[] = [];
      for (let i = 0; i < options.runs; i++) {
        const group = `first-${tiers}-${i}`;
        await timed(cli('groups', 'create', group, '--topic', 'prices', '--start', 'earliest',
          ...(tiers > 0 ? ['--retry', Array(tiers).fill('1s').join(',')] : [])), url);
        times.push(await timed(cli('consume', 'prices', '--group', group, '--max-records', '1'), url));
      }
      times.sort((a, b) => a - b);
      if (tiers === 0) without = times[0]!;
      console.log(`| ${tiers} | ${times[0]!.toFixed(0)} | ${times[Math.floor(times.length / 2)]!.toFixed(0)} | ${(times[0]! / without).toFixed(2)} |`);
    }
  } finally {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
