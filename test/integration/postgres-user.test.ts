/**
 * A PostgreSQL URL without a user name, in a process without `USER` (a service manager, a container): the user is
 * the one libpq (psql) would take, env `PGUSER`, else the operating system's user name, never "no PostgreSQL user
 * name specified in startup packet". Run in a child process: the pg driver reads `USER` when it is loaded.
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { withDefaultUser } from '../../src/common/postgres.js';
import { PG_URL } from '../helpers/services.js';

const POSTGRES_MODULE = path.resolve(import.meta.dirname, '../../dist/common/postgres.js');

/** What `select current_user` answers through openPool(url) in a child whose environment lacks `unset`. */
function currentUser(url: string, unset: string[], extra: Record<string, string> = {}): { user?: string; error?: string } {
  const env = { ...process.env, ...extra };
  for (const name of unset) delete env[name];
  const script = `const { openPool } = await import(${JSON.stringify(POSTGRES_MODULE)});
    const pool = openPool(${JSON.stringify(url)}, 1);
    try { console.log(JSON.stringify({ user: (await pool.query('select current_user')).rows[0].current_user })); }
    catch (err) { console.log(JSON.stringify({ error: err.message })); }
    await pool.end();`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8', timeout: 20_000 });
  return JSON.parse(child.stdout.trim().split('\n').at(-1)!) as { user?: string; error?: string };
}

describe('a PostgreSQL URL without a user', () => {
  const noUser = (() => {
    const u = new URL(PG_URL);
    const named = u.username;
    u.username = '';
    return { url: u.toString(), named };
  })();

  it('connects as PGUSER when set, with USER unset', () => {
    expect(currentUser(noUser.url, ['USER'], { PGUSER: noUser.named || 'postgres' })).toEqual({ user: noUser.named || 'postgres' });
  });

  it('connects as the operating system user when neither PGUSER nor USER is set (failed: "no PostgreSQL user name")', () => {
    const me = os.userInfo().username;
    const answer = currentUser(noUser.url, ['USER', 'PGUSER']);
    // The OS user may have no role on this server: then the refusal names it, which is what psql does too.
    if (answer.error !== undefined) expect(answer.error).toContain(`"${me}"`);
    else expect(answer).toEqual({ user: me });
  });

  it('leaves a URL that names its user, or that is not a URL, as it is', () => {
    expect(withDefaultUser('postgres://alice@db:5432/x')).toBe('postgres://alice@db:5432/x');
    expect(withDefaultUser('host=/var/run/postgresql dbname=x')).toBe('host=/var/run/postgresql dbname=x');
    const saved = process.env.PGUSER;
    process.env.PGUSER = 'bob smith';
    try {
      expect(withDefaultUser('postgres://db:5432/x?sslmode=disable')).toBe('postgres://bob%20smith@db:5432/x?sslmode=disable');
    } finally {
      if (saved === undefined) delete process.env.PGUSER;
      else process.env.PGUSER = saved;
    }
  });
});
