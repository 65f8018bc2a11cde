/**
 * `onelog consume --exec CMD`: CMD as a record handler. It runs through `sh -c` with the record's value on
 * stdin and where the record comes from in its environment; its exit code says whether it processed it.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import type { ConsumedMessage } from '../member/consumer.js';

/** How the command ended, and why, when it failed: the last non-empty line of its stderr (or its exit). */
export interface ExecOutcome {
  exitCode: number;
  reason: string;
}

/**
 * Runs `command` once for `m`: stdin is the value (empty for null), the environment adds `ONELOG_TOPIC`,
 * `ONELOG_PARTITION`, `ONELOG_OFFSET` (where this delivery comes from: a retry tier's, on a retry),
 * `ONELOG_KEY` (empty for null), `ONELOG_ATTEMPT`, `ONELOG_TIMESTAMP` (ms since the epoch) and
 * `ONELOG_ORIGINAL_TOPIC`, `ONELOG_ORIGINAL_PARTITION`, `ONELOG_ORIGINAL_OFFSET` (the record as first appended).
 * Its output is not shown (stdout keeps one JSON line per outcome): the last line of its stderr is the
 * reason of a failure. A command killed by a signal counts as exit 128 + the signal's number, as a shell says.
 */
export function runPerRecord(command: string, m: ConsumedMessage): Promise<ExecOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ONELOG_TOPIC: m.topic, ONELOG_PARTITION: String(m.partition), ONELOG_OFFSET: String(m.offset),
        ONELOG_KEY: m.key?.toString('utf8') ?? '', ONELOG_ATTEMPT: String(m.attempt), ONELOG_TIMESTAMP: String(m.timestamp),
        ONELOG_ORIGINAL_TOPIC: m.original.topic, ONELOG_ORIGINAL_PARTITION: String(m.original.partition),
        ONELOG_ORIGINAL_OFFSET: String(m.original.offset),
      },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-8192);
    });
    child.stdout.resume(); // read and dropped
    // A command that does not read its stdin closes it early: that is not a failure of the record.
    child.stdin.on('error', () => {});
    child.stdin.end(m.value ?? Buffer.alloc(0));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const exitCode = code ?? 128 + (signal ? os.constants.signals[signal] : 0);
      const lines = stderr.split('\n').map((l) => l.trim()).filter((l) => l !== '');
      resolve({ exitCode, reason: lines[lines.length - 1] ?? `exited ${exitCode}${signal ? ` (${signal})` : ''}` });
    });
  });
}

