/**
 * Real processes for integration tests: the onelog server (`bin/onelog.js serve`, the built CLI) on port 0
 * with a data directory, and CLI runs. Requires `npm run build` first (the test script does it).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';

export const BIN = path.resolve(import.meta.dirname, '../../bin/onelog.js');

/** A running server. */
export interface ServerProcess {
  url: string;
  proc: ChildProcess;
  /** Ends the process with `signal` and resolves with its exit code (null when killed by the signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** How to start a server beyond the defaults. */
export interface ServerOptions {
  /** Runs it under `ulimit -n N` (soft and hard open-files limit). */
  openFilesLimit?: number;
  /** Runs it under `umask MASK` (octal, as the shell takes it). */
  umask?: string;
  /** More `serve` flags. */
  args?: string[];
  /** Node's own flags before the script, e.g. `--cpu-prof` (which NODE_OPTIONS does not take). */
  nodeArgs?: string[];
  /** Called with every log line the server prints (parsed JSON). */
  onLog?: (entry: Record<string, unknown>) => void;
}

/** Starts `onelog serve --data-dir DIR --port 0` and resolves once it logs its address. */
export function startServer(dataDir: string, options: ServerOptions = {}): Promise<ServerProcess> {
  const argv = [...(options.nodeArgs ?? []), BIN, 'serve', '--data-dir', dataDir, '--port', '0', ...(options.args ?? [])];
  const shell = [
    ...(options.openFilesLimit === undefined ? [] : [`ulimit -n ${options.openFilesLimit}`]),
    ...(options.umask === undefined ? [] : [`umask ${options.umask}`]),
  ];
  const proc = shell.length === 0
    ? spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] })
    // exec: the server keeps the shell's pid, so /proc/PID/fd is the server's.
    : spawn('/bin/sh', ['-c', `${shell.join(' && ')} && exec "$0" "$@"`, process.execPath, ...argv], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: proc.stdout! });
    lines.on('line', (line) => {
      const entry = JSON.parse(line) as { msg?: string; url?: string };
      options.onLog?.(entry);
      if (entry.msg === 'onelog is listening' && entry.url) {
        resolve({
          url: entry.url,
          proc,
          stop: (signal = 'SIGTERM') => {
            proc.kill(signal);
            return exited;
          },
        });
      }
    });
    proc.once('exit', (code) => reject(new Error(`server exited with ${code} before listening: ${stderr}`)));
  });
}

/** What a CLI run printed and how it ended. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `onelog ARGS...` against `url` (via ONELOG_URL), with `env` added to the environment, and collects its output. */
export function runCli(url: string, args: string[], input?: Buffer, env: Record<string, string> = {}): Promise<CliResult> {
  const proc = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, ONELOG_URL: url, ...env },
    stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  // Keep bytes until the end: decoding chunk by chunk would split multi-byte UTF-8 characters.
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  proc.stdout!.on('data', (d: Buffer) => stdout.push(d));
  proc.stderr!.on('data', (d: Buffer) => stderr.push(d));
  if (input) proc.stdin!.end(input);
  return new Promise((resolve) =>
    proc.once('close', (code) =>
      resolve({ code, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') }),
    ),
  );
}
