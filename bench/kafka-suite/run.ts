/**
 * librdkafka's own integration tests against onelog (docs/kafka.md, "librdkafka's test suite"): builds the test runner
 * of a librdkafka source tree given by path (Debian's build packages suffice: gcc, make, libssl-dev, zlib1g-dev; the
 * tree is the user's, or by default librdkafka 2.15.1's from the npm registry, test/compat/librdkafka.sh; never a copy
 * in this repository), then runs each named test against a fresh `onelog serve --kafka-port 0 --auto-create-topics
 * --default-partitions 4` (a new data directory per test) and prints passed / failed / n/a, with the first error of
 * each failure.
 *
 *   npm run build && npx tsx bench/kafka-suite/run.ts [--librdkafka ~/src/librdkafka] [--tests 0001,0171] [--markdown]
 *
 * The tests run are those of bench/kafka-suite/tests.txt (`NNNN family`, or `NNNN n/a: why` for a test of a feature
 * onelog does not have), or `--tests`. Each runs alone, its broker version told as 4.2.0 (so the share consumer tests
 * run), within `--timeout-s` (default 600). A test's verdict is read from the runner's output (its summary line), not
 * its exit code: the runner of librdkafka 2.15 can abort at exit after its tests passed.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { Command } from 'commander';
import { startServer } from '../../test/helpers/processes.js';

const run = promisify(execFile);

/** One test of the list. */
export interface SuiteTest {
  id: string;
  /** What it covers (the list's second column). */
  family: string;
  /** Why it does not apply to onelog, for a test the list marks `n/a`. */
  notApplicable: string | null;
}

/** One test's verdict. */
export interface SuiteResult {
  test: SuiteTest;
  outcome: 'passed' | 'failed' | 'n/a';
  /** The first failure the runner reported (its `### Test ... failed` line and the line after it). */
  firstError: string | null;
  seconds: number;
}

/** The tests of a list file: `NNNN family words` or `NNNN n/a: reason`; `#` starts a comment. */
export function readTestList(text: string): SuiteTest[] {
  return text.split('\n').map((l) => l.replace(/#.*/, '').trim()).filter((l) => l !== '').map((line) => {
    const m = /^(\d{4})\s+(.*)$/.exec(line);
    if (!m) throw new Error(`not a test line (NNNN family, or NNNN n/a: why): ${JSON.stringify(line)}`);
    const rest = m[2]!;
    const na = /^n\/a:\s*(.*)$/.exec(rest);
    return { id: m[1]!, family: na ? 'n/a' : rest, notApplicable: na ? na[1]! : null };
  });
}

/** The verdict in a runner's output: passed, or failed with its first error. */
export function readVerdict(output: string): { passed: boolean; firstError: string | null } {
  const clean = output.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), ''); // the runner's colours
  const lines = clean.split('\n');
  const failedAt = lines.findIndex((l) => /^### Test .* failed at /.test(l));
  if (failedAt >= 0) return { passed: false, firstError: `${lines[failedAt]!.replace(/^### |###$/g, '').trim()}: ${lines[failedAt + 1]?.trim() ?? ''}` };
  if (/ALL TESTS PASSED/.test(clean) && !/TEST FAILURE|TESTS FAILED/.test(clean)) return { passed: true, firstError: null };
  const hint = lines.find((l) => /FAIL|Timed out|timeout/i.test(l));
  return { passed: false, firstError: hint?.trim() ?? 'no verdict in the runner\'s output (it crashed or was stopped)' };
}

/** Builds the runner in `tree` unless it is built: the library, then the tests. */
async function build(tree: string): Promise<string> {
  const runner = path.join(tree, 'tests', 'test-runner');
  if (existsSync(runner)) return runner;
  console.log(`building librdkafka's test runner in ${tree} (a few minutes) ...`);
  if (!existsSync(path.join(tree, 'Makefile.config'))) await run('./configure', ['--disable-gssapi', '--disable-curl'], { cwd: tree, maxBuffer: 1 << 26 });
  await run('make', ['-j2', 'libs'], { cwd: tree, maxBuffer: 1 << 26 });
  await run('make', ['-j2', 'build'], { cwd: path.join(tree, 'tests'), maxBuffer: 1 << 26 });
  return runner;
}

/** Runs one test against a fresh broker. */
async function runOne(tree: string, runner: string, test: SuiteTest, timeoutS: number): Promise<SuiteResult> {
  if (test.notApplicable !== null) return { test, outcome: 'n/a', firstError: test.notApplicable, seconds: 0 };
  const dir = mkdtempSync(path.join(os.tmpdir(), `onelog-suite-${test.id}-`));
  let kafka = '';
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  const started = Date.now();
  try {
    server = await startServer(path.join(dir, 'data'), {
      // Topics the tests do not create are created with 4 partitions, as by the suite's own cluster (trivup's num.partitions).
      args: ['--kafka-port', '0', '--auto-create-topics', '--default-partitions', '4'],
      onLog: (e) => void (typeof e.kafka === 'string' && (kafka = e.kafka)),
    });
    const conf = path.join(dir, 'test.conf');
    writeFileSync(conf, `bootstrap.servers=${kafka}\n`);
    const child = spawn(runner, [test.id], {
      cwd: path.join(tree, 'tests'),
      env: {
        ...process.env, TESTS: test.id, TEST_KAFKA_VERSION: '4.2.0', RDKAFKA_TEST_CONF: conf,
        LD_LIBRARY_PATH: [path.join(tree, 'src'), path.join(tree, 'src-cpp')].join(':'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutS * 1000);
    await new Promise((resolve) => child.once('close', resolve));
    clearTimeout(timer);
    const verdict = readVerdict(output);
    return { test, outcome: verdict.passed ? 'passed' : 'failed', firstError: verdict.firstError, seconds: (Date.now() - started) / 1000 };
  } finally {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const o = new Command()
    .option('--librdkafka <dir>', 'a librdkafka source tree (its tests/ folder holds the suite); default: 2.15.1 from the npm registry (test/compat/librdkafka.sh)')
    .option('--tests <ids>', 'comma-separated test numbers (default: every test of --list)')
    .option('--list <file>', 'the tests to run', path.join(import.meta.dirname, 'tests.txt'))
    .option('--timeout-s <s>', 'most seconds one test runs', '600')
    .option('--markdown', 'print the results as a Markdown table too')
    .parse()
    .opts<{ librdkafka?: string; tests?: string; list: string; timeoutS: string; markdown?: boolean }>();
  const tree = o.librdkafka === undefined
    ? (await run('bash', [path.join(import.meta.dirname, '../../test/compat/librdkafka.sh')], { maxBuffer: 1 << 26 })).stdout.trim()
    : path.resolve(o.librdkafka);
  const listed = readTestList(readFileSync(o.list, 'utf8'));
  const tests = o.tests === undefined ? listed : o.tests.split(',').map((id) => listed.find((t) => t.id === id.trim()) ?? { id: id.trim(), family: '', notApplicable: null });
  const runner = await build(tree);
  const results: SuiteResult[] = [];
  for (const test of tests) {
    const r = await runOne(tree, runner, test, Number(o.timeoutS));
    results.push(r);
    console.log(`${r.test.id} ${r.outcome.padEnd(6)} ${r.seconds.toFixed(0).padStart(4)} s  ${r.test.family}${r.firstError ? `  -- ${r.firstError}` : ''}`);
  }
  const count = (k: SuiteResult['outcome']) => results.filter((r) => r.outcome === k).length;
  console.log(`\n${count('passed')} passed, ${count('failed')} failed, ${count('n/a')} not applicable, of ${results.length}`);
  if (o.markdown) {
    console.log('\n| test | what it covers | result | first error / why not applicable |\n| --- | --- | --- | --- |');
    for (const r of results) console.log(`| ${r.test.id} | ${r.test.family} | ${r.outcome} | ${(r.firstError ?? '').replace(/\|/g, '\\|')} |`);
  }
  if (count('failed') > 0) process.exitCode = 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
