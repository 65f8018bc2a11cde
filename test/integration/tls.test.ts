/**
 * TLS (docs/security.md) on a real `onelog serve --tls-cert --tls-key [--tls-ca]` with a test CA: the CLI over
 * https with --ca or ONELOG_CA, the binary data path over wss, a Kafka client over TLS; a plain-HTTP request to
 * the TLS port fails cleanly (a clear error, the broker still serving); client certificates with --tls-ca.
 * Needs the build.
 */
import fs from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Onelog } from '../../src/client/index.js';
import { makeTestCerts } from '../helpers/certs.js';
import type { TestCerts } from '../helpers/certs.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';

let server: ServerProcess | undefined;
let certs: TestCerts;
beforeEach(() => {
  certs = makeTestCerts();
});
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function serveTls(extra: string[] = []): Promise<{ url: string; kafkaPort: number }> {
  let kafka = '';
  server = await startServer(tmpDir(), {
    args: ['--tls-cert', certs.serverCert, '--tls-key', certs.serverKey, '--kafka-port', '0', ...extra],
    onLog: (entry) => { if (typeof entry.kafka === 'string') kafka = entry.kafka; },
  });
  return { url: server.url, kafkaPort: Number(kafka.split(':').pop()) };
}

describe('TLS', () => {
  it('serves the CLI, the data path and Kafka clients over TLS, and no plain HTTP', async () => {
    const { url, kafkaPort } = await serveTls();
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const created = await runCli(url, ['--ca', certs.ca, 'topics', 'create', 'edits', '--partitions', '1']);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect((await runCli(url, ['topics', 'list', '--json'], undefined, { ONELOG_CA: certs.ca })).stdout).toContain('"edits"');

    // Without the CA the server's certificate is not trusted: a clear error, not a hang.
    const untrusted = await runCli(url, ['topics', 'list']);
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toMatch(/NETWORK_ERROR.*--ca FILE or ONELOG_CA/);

    // Plain HTTP to the TLS port: refused at the handshake, the client says to use https://.
    const plainUrl = url.replace('https://', 'http://');
    const plain = await runCli(plainUrl, ['topics', 'list']);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/NETWORK_ERROR.*use an https:\/\/ URL/);
    await expect(fetch(`${plainUrl}/health`)).rejects.toThrow();

    // The binary data path over wss, with the CA given to the client.
    const client = new Onelog({ url, binary: true, tls: { ca: fs.readFileSync(certs.ca) } });
    const sent = await client.api.produce({ topic: 'edits', records: [{ key: null, value: Buffer.from('over wss') }] });
    expect(sent.offsets).toEqual([{ partition: 0, offset: 0 }]);
    const fetched = await client.api.fetch({ topic: 'edits', partitions: [{ partition: 0, offset: 0 }] });
    expect(fetched.partitions[0]!.records[0]!.value?.toString()).toBe('over wss');

    // The Kafka listener speaks TLS too.
    const kafka = new Kafka({ brokers: [`127.0.0.1:${kafkaPort}`], ssl: { ca: [fs.readFileSync(certs.ca, 'utf8')] }, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      expect(await admin.listTopics()).toContain('edits');
    } finally {
      await admin.disconnect();
    }
  });

  it('with --tls-ca asks every client for a certificate signed by that CA', async () => {
    const { url } = await serveTls(['--tls-ca', certs.ca]);
    const without = await runCli(url, ['--ca', certs.ca, 'topics', 'list']);
    expect(without.code).toBe(1);
    expect(without.stderr).toContain('NETWORK_ERROR');
    const withCert = await runCli(url, ['--ca', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey, 'topics', 'list', '--json']);
    expect(withCert).toMatchObject({ code: 0, stdout: '[]\n' });
    const halfPair = await runCli(url, ['--ca', certs.ca, '--cert', certs.clientCert, 'topics', 'list']);
    expect(halfPair.stderr).toContain('a client certificate needs its key: give both --cert and --key');
  });

  it('serve refuses incomplete or mismatched TLS files, saying which', async () => {
    const dataDir = tmpDir();
    const noKey = await runCli('http://127.0.0.1:1', ['serve', '--data-dir', dataDir, '--port', '0', '--tls-cert', certs.serverCert]);
    expect(noKey.stderr).toContain('TLS needs both --tls-cert FILE and --tls-key FILE');
    const mismatched = await runCli('http://127.0.0.1:1', ['serve', '--data-dir', dataDir, '--port', '0', '--tls-cert', certs.serverCert, '--tls-key', certs.clientKey]);
    expect(mismatched.code).toBe(1);
    expect(mismatched.stderr).toContain('INVALID_REQUEST');
    const missing = await runCli('http://127.0.0.1:1', ['serve', '--data-dir', dataDir, '--port', '0', '--tls-cert', '/nonexistent.pem', '--tls-key', certs.serverKey]);
    expect(missing.stderr).toContain('cannot read --tls-cert /nonexistent.pem');
  });
});
