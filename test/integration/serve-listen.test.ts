/**
 * `onelog serve` whose listener cannot open (its port taken): the process ends with exit code 1 and an error naming
 * the code, the address and the port, after closing the broker, so the data directory's lock is released and the
 * next start on it succeeds at once. Real processes; needs the build.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, startServer } from '../helpers/processes.js';
import type { CliResult, ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A port on 127.0.0.1 held by another listener until the test ends. */
async function takenPort(): Promise<number> {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => holder.close(resolve)));
  return (holder.address() as net.AddressInfo).port;
}

/**
 * Runs `onelog serve ARGS` to its end; a serve still running after `deadlineMs` (the bug: alive, holding the lock)
 * is killed and answered with code null.
 */
function serveToEnd(args: string[], deadlineMs = 20_000): Promise<CliResult> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--log-format', 'json', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const deadline = setTimeout(() => proc.kill('SIGKILL'), deadlineMs);
  return new Promise((resolve) => proc.once('close', (code) => {
    clearTimeout(deadline);
    resolve({ code, stdout, stderr });
  }));
}

async function server(dataDir: string, args: string[] = []): Promise<ServerProcess> {
  const s = await startServer(dataDir, { args });
  cleanups.push(() => s.stop());
  return s;
}

describe('serve that cannot listen', () => {
  it('the HTTP port in use: exit 1, INVALID_CONFIG naming 127.0.0.1:PORT and EADDRINUSE; the lock released', async () => {
    const port = await takenPort();
    const dataDir = tmpDir();
    const r = await serveToEnd(['--data-dir', dataDir, '--port', String(port)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error INVALID_CONFIG: the HTTP API cannot listen on 127.0.0.1:${port} (--port)`);
    expect(r.stderr).toContain('EADDRINUSE');
    expect(r.stderr).toContain(`"port":${port}`);
    const again = await server(dataDir);
    expect((await fetch(`${again.url}/topics`)).status).toBe(200);
  });

  it('the Kafka port in use: exit 1 (no HTTP API left serving), naming --kafka-port and the port; the lock released', async () => {
    const port = await takenPort();
    const dataDir = tmpDir();
    const r = await serveToEnd(['--data-dir', dataDir, '--port', '0', '--kafka-port', String(port)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error INVALID_CONFIG: the Kafka listener cannot listen on 127.0.0.1:${port} (--kafka-port)`);
    expect(r.stderr).toContain('"option":"kafka-port"');
    expect(r.stderr).toContain('EADDRINUSE');
    const again = await server(dataDir, ['--kafka-port', '0']);
    expect((await fetch(`${again.url}/topics`)).status).toBe(200);
  });
});

describe('serve --auto-create-topics', () => {
  it('creates the topics Kafka clients name with --default-partitions; refuses either flag without what it needs', async () => {
    const dataDir = tmpDir();
    for (const [args, option] of [[['--auto-create-topics'], 'auto-create-topics'], [['--kafka-port', '0', '--default-partitions', '3'], 'default-partitions']] as const) {
      const r = await serveToEnd(['--data-dir', dataDir, '--port', '0', ...args]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('error INVALID_CONFIG');
      expect(r.stderr).toContain(`"option":"${option}"`);
    }
    let kafka = '';
    const s = await startServer(dataDir, { args: ['--kafka-port', '0', '--auto-create-topics', '--default-partitions', '3'], onLog: (l) => {
      if (l.msg === 'onelog is listening') kafka = String(l.kafka);
    } });
    cleanups.push(() => s.stop());
    const producer = new Kafka({ clientId: 'p', brokers: [kafka], logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    await producer.send({ topic: 'clicks', messages: [{ value: 'one' }] });
    await producer.disconnect();
    const described = await (await fetch(`${s.url}/topics/clicks`)).json() as { partitions: unknown[] };
    expect(described.partitions).toHaveLength(3);
  });
});
