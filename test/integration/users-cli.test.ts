/**
 * `onelog users` and `--token` as a user runs them against `onelog serve`: the first user from loopback, its token
 * printed once; commands without a token refused with UNAUTHENTICATED; `serve` refuses a non-loopback --host while
 * no user exists. Needs the build.
 */
import { afterEach, describe, expect, it } from 'vitest';
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

  it('serve refuses a non-loopback --host while no user exists, saying what to do', async () => {
    const r = await runCli('http://127.0.0.1:1', ['serve', '--data-dir', tmpDir(), '--host', '0.0.0.0', '--port', '0']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('FORBIDDEN');
    expect(r.stderr).toContain('onelog users create NAME');
  });
});
