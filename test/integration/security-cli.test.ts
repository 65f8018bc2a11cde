/**
 * `onelog users`, `onelog acls` and `--token` as a user runs them against `onelog serve`: the first user from
 * loopback, its token printed once; commands without a token refused with UNAUTHENTICATED; ACLs deciding what a
 * user may do; `serve` refuses a non-loopback --host while no user exists; serve's limit and quota flags. Needs the build.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/protocol/security.js';
import { runCli, startServer } from '../helpers/processes.js';
import type { ServerProcess } from '../helpers/processes.js';
import { tmpDir } from '../helpers/tmp.js';

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

describe('onelog users', () => {
  it('creates the first user (an admin) and then every command needs its token', async () => {
    server = await startServer(tmpDir());
    const created = await runCli(server.url, ['users', 'create', 'ops', '--json']);
    expect(created.code).toBe(0);
    const { user, token } = JSON.parse(created.stdout) as { user: string; token: string };
    expect(user).toBe('ops');

    const refused = await runCli(server.url, ['topics', 'list']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('UNAUTHENTICATED');
    expect((await runCli(server.url, ['--token', token, 'topics', 'create', 'edits', '--partitions', '2'])).code).toBe(0);
    const listed = await runCli(server.url, ['--token', token, 'users', 'list', '--json']);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ user: 'ops', admin: true, rotatedAt: null }]);

    const audit = JSON.parse((await runCli(server.url, ['--token', token, 'audit', 'list', '--json'])).stdout) as Array<{ principal: string; action: string }>;
    expect(audit.map((e) => [e.principal, e.action])).toEqual([['anonymous', 'user-create']]);

    const rotated = await runCli(server.url, ['--token', token, 'users', 'rotate', 'ops']);
    expect(rotated.stdout).toMatch(/new token for ops \(admin\); its token, shown this once:\nonelog_/);
    expect((await runCli(server.url, ['--token', token, 'topics', 'list'])).stderr).toContain('UNAUTHENTICATED');
  });

  it('onelog acls add, list and remove decide what a user may do', async () => {
    server = await startServer(tmpDir());
    const { token } = JSON.parse((await runCli(server.url, ['users', 'create', 'ops', '--json'])).stdout) as { token: string };
    const loader = (JSON.parse((await runCli(server.url, ['--token', token, 'users', 'create', 'loader', '--json'])).stdout) as { token: string }).token;
    await runCli(server.url, ['--token', token, 'topics', 'create', 'orders.eu', '--partitions', '1']);
    const produce = () => runCli(server!.url, ['--token', loader, 'produce', 'orders.eu'], Buffer.from('{"value":"one"}\n'));
    expect((await produce()).stderr).toContain('FORBIDDEN');

    const add = await runCli(server.url, ['--token', token, 'acls', 'add', '--principal', 'loader', '--topic', 'orders.', '--prefix', '--operation', 'write']);
    expect(add.stdout).toBe('added: allow loader write on topic:orders. (prefix)\n');
    expect((await produce()).stderr).toBe('');
    await runCli(server.url, ['--token', token, 'acls', 'add', '--principal', '*', '--topic', 'orders.eu', '--operation', 'write', '--deny']);
    expect((await produce()).stderr).toContain('FORBIDDEN');

    const listed = await runCli(server.url, ['--token', token, 'acls', 'list']);
    expect(listed.stdout.split('\n')[0]).toMatch(/^PRINCIPAL +RESOURCE +OPERATION +PERMISSION$/);
    expect(JSON.parse((await runCli(server.url, ['--token', token, 'acls', 'list', '--principal', 'loader', '--json'])).stdout)).toEqual([
      { principal: 'loader', resourceType: 'topic', resourceName: 'orders.', patternType: 'prefix', operation: 'write', permission: 'allow' },
    ]);
    const removed = await runCli(server.url, ['--token', token, 'acls', 'remove', '--principal', '*', '--topic', 'orders.eu', '--operation', 'write', '--deny']);
    expect(removed.code).toBe(0);
    expect((await produce()).code).toBe(0);

    const bad = await runCli(server.url, ['--token', token, 'acls', 'add', '--principal', 'loader', '--topic', 't', '--cluster', '--operation', 'read']);
    expect(bad.stderr).toContain('name one resource: --topic T, --group G or --cluster');
    const badOp = await runCli(server.url, ['--token', token, 'acls', 'add', '--principal', 'loader', '--topic', 't', '--operation', 'steal']);
    expect(badOp.stderr).toContain('--operation must be one of read, write, create, delete, alter, describe, reset, all, got "steal"');
    expect((await runCli(server.url, ['--token', loader, 'acls', 'list'])).stderr).toContain('FORBIDDEN');

    // The produce refused by the deny ACL is in the audit with why. The first one was refused at the CLI's describe of
    // the topic (a read, not recorded, as the refused acls list), before it sent a record.
    const audit = await runCli(server.url, ['--token', token, 'audit', 'list']);
    expect(audit.stdout.split('\n')[0]).toMatch(/^ID +AT +PRINCIPAL +ACTION +TARGET +OUTCOME +DETAILS$/);
    const refused = (JSON.parse((await runCli(server.url, ['--token', token, 'audit', 'list', '--json'])).stdout) as AuditEntry[])
      .filter((e) => e.outcome === 'refused');
    expect(refused.map((e) => [e.principal, e.target, e.details.operation])).toEqual([['loader', 'topic:orders.eu', 'write']]);
    expect(refused[0]!.details.reason).toContain('user loader may not write topic "orders.eu": an ACL denies it');
  });

  it('serve takes its limits and quotas from flags', async () => {
    server = await startServer(tmpDir(), { args: ['--max-records-per-request', '2', '--max-record-bytes', '2048', '--quota-requests-per-sec', '1000'] });
    await runCli(server.url, ['topics', 'create', 'edits', '--partitions', '1']);
    const three = await runCli(server.url, ['produce', 'edits'], Buffer.from('{"value":"a"}\n{"value":"b"}\n{"value":"c"}\n'));
    expect(three.stderr).toContain('REQUEST_TOO_LARGE');
    const big = await runCli(server.url, ['produce', 'edits'], Buffer.from(`${JSON.stringify({ value: 'x'.repeat(4000) })}\n`));
    expect(big.stderr).toContain('RECORD_TOO_LARGE');
    expect((await runCli(server.url, ['produce', 'edits'], Buffer.from('{"value":"a"}\n{"value":"b"}\n'))).code).toBe(0);
    // A refused record among others of its request, over two partitions: the rows before it are produced, the error
    // names its line, and the rows after it are not.
    await runCli(server.url, ['topics', 'create', 'keyed', '--partitions', '2']);
    const rows = ['a', 'b', 'c', 'd'].map((k) => JSON.stringify({ k, v: k === 'c' ? 'x'.repeat(4000) : k })).join('\n');
    const refused = await runCli(server.url, ['produce', 'keyed', '--key-field', 'k', '--batch-records', '100'], Buffer.from(rows));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/RECORD_TOO_LARGE: line 3: /);
    expect(refused.stderr).toContain('2 records before it were produced and are kept');
    const keyed = JSON.parse((await runCli(server.url, ['topics', 'describe', 'keyed', '--json'])).stdout) as { partitions: Array<{ highWatermark: number }> };
    expect(keyed.partitions.reduce((n, p) => n + p.highWatermark, 0)).toBe(2);
    const bad = await runCli('http://127.0.0.1:1', ['serve', '--data-dir', tmpDir(), '--port', '0', '--max-connections', '0']);
    expect(bad.stderr).toContain('--max-connections must be an integer >= 1');
  });

  it('serve refuses a non-loopback --host while no user exists, saying what to do', async () => {
    const r = await runCli('http://127.0.0.1:1', ['serve', '--data-dir', tmpDir(), '--host', '0.0.0.0', '--port', '0']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('FORBIDDEN');
    expect(r.stderr).toContain('onelog users create NAME');
  });
});

/** A loopback port nothing listens on (one just closed). */
async function closedPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe('a password in the server URL', () => {
  it('is printed nowhere: not for a closed port, a broker refusing the token, ONELOG_URL or a password= parameter', async () => {
    server = await startServer(tmpDir());
    expect((await runCli(server.url, ['users', 'create', 'ops'])).code).toBe(0);
    const reachable = new URL(server.url).host;
    const closed = `127.0.0.1:${await closedPort()}`;
    const runs = [
      ['--server', `http://admin:hunter2@${closed}`, 'topics', 'list'],
      ['--server', `http://admin:hunter2@${reachable}`, '--token', 'onelog_0000000000000000_bad', 'topics', 'list'],
      ['--server', `http://${closed},http://admin:hunter2@${reachable}`, 'topics', 'list'],
      ['--server', `http://${reachable}/?password=hunter2`, 'topics', 'list'],
      ['--server', `http://${closed}/?password=hunter2`, 'topics', 'list'],
    ].map((args) => runCli(server!.url, args));
    runs.push(runCli(`http://admin:hunter2@${reachable}`, ['groups', 'list']));
    for (const r of await Promise.all(runs)) {
      expect(r.code).toBe(1);
      expect(r.stdout + r.stderr).not.toContain('hunter2');
      expect(r.stderr).toMatch(/^error [A-Z_]+: /);
    }
    const refused = (await runs[0]!).stderr;
    expect(refused).toContain('error INVALID_REQUEST: server URL "http://***@');
    expect(refused).toContain('--token TOKEN or ONELOG_TOKEN');
  });
});
