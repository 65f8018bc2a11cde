/**
 * The package as npm users get it: `npm pack` holds the build, the CLI, the docs, README and LICENSE, and none of
 * the tests, benchmarks or example data; installed into an empty project, `npx onelog serve` runs and
 * `import { Onelog } from 'onelog'` talks to it. Needs the build (`npm test` does it) and the npm registry (or
 * npm's cache) for the dependencies.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '../helpers/tmp.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('the npm package', () => {
  it('packs what a user needs, installs into an empty project, serves and is importable', async () => {
    const out = tmpDir('onelog-pack-');
    // --ignore-scripts: the build is there already, and rebuilding dist/ would pull it from under the tests running beside this one.
    const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], { cwd: ROOT, encoding: 'utf8' })) as Array<{
      filename: string; size: number; files: Array<{ path: string }>;
    }>;
    const files = packed[0]!.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'bin/onelog.js', 'dist/client/index.js', 'dist/broker/index.js', 'docs/retries.md']));
    expect(files.filter((f) => /^(test|bench|examples|src)\//.test(f))).toEqual([]);
    expect(packed[0]!.size).toBeLessThan(2 * 1024 * 1024);

    const project = tmpDir('onelog-user-');
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'user', version: '1.0.0', type: 'module', private: true }));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', path.join(out, packed[0]!.filename)], { cwd: project, stdio: 'ignore' });

    const server = spawn('npx', ['onelog', 'serve', '--data-dir', path.join(project, 'data'), '--port', '0', '--log-format', 'json'], {
      cwd: project, stdio: ['ignore', 'pipe', 'inherit'], detached: true,
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        readline.createInterface({ input: server.stdout! }).on('line', (line) => {
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          if (entry.msg === 'onelog is listening' && entry.url) resolve(entry.url);
        });
        server.once('exit', (code) => reject(new Error(`npx onelog serve exited with ${code}`)));
      });
      const script = `
        import { Onelog } from 'onelog';
        const onelog = new Onelog({ url: ${JSON.stringify(url)} });
        await onelog.admin().createTopic({ topic: 'edits', partitions: 2 });
        const sent = await onelog.producer().send({ topic: 'edits', messages: [{ key: 'k', value: 'v' }] });
        console.log(JSON.stringify({ topics: (await onelog.admin().listTopics()).map((t) => t.topic), sent: sent.offsets.length }));`;
      const printed = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8' });
      expect(JSON.parse(printed)).toEqual({ topics: ['edits'], sent: 1 });
    } finally {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      process.kill(-server.pid!, 'SIGTERM'); // npx and the server under it
      await exited; // before the data directory is removed
    }
  }, 600_000);
});
