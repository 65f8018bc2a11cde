/**
 * An S3-compatible server for tests: s3rver (from npm) in a child process on loopback, port 0, over a temporary
 * directory, with one bucket; its credentials are s3rver's fixed pair, set in the environment as the AWS SDK
 * reads them. The child runs with OpenSSL's legacy provider: s3rver makes ListObjectsV2's continuation tokens
 * with DES, which Node 20's OpenSSL 3 refuses otherwise.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

/** A running S3-compatible server and how to reach its bucket. */
export interface S3Server {
  /** `http://127.0.0.1:PORT` */
  endpoint: string;
  bucket: string;
  /** `s3://BUCKET?endpoint=...`, as `onelog serve --log` takes it. */
  url: string;
  close(): Promise<void>;
}

/** s3rver's fixed credentials (any other pair is refused). */
export const S3RVER_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

const S3RVER_BIN = path.join(path.dirname(createRequire(import.meta.url).resolve('s3rver/package.json')), 'bin', 's3rver.js');

export async function startS3(bucket = 'onelog'): Promise<S3Server> {
  Object.assign(process.env, S3RVER_CREDENTIALS);
  // Its own directory, removed on close (not after each test: a server may serve a whole file's tests).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'onelog-s3-'));
  const proc = spawn(process.execPath, ['--openssl-legacy-provider', S3RVER_BIN, '-d', dir, '-a', '127.0.0.1', '-p', '0',
    '--configure-bucket', bucket, '--silent'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      const m = /S3rver listening on [\d.]+:(\d+)/.exec(line);
      if (m) resolve(Number(m[1]));
    });
    proc.once('exit', (code) => reject(new Error(`s3rver exited with ${code} before listening: ${stderr}`)));
  });
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint, bucket, url: `s3://${bucket}?endpoint=${encodeURIComponent(endpoint)}`,
    close: async () => {
      proc.kill('SIGTERM');
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
