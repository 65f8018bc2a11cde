/** An s3rver for one test file (test/helpers/s3.ts starts it; kept apart so that the benchmarks load s3.ts without vitest). */
import { afterAll, beforeAll } from 'vitest';
import { startS3 } from './s3.js';
import type { S3Server } from './s3.js';

/** Starts an s3rver before the file's tests and stops it after them; the function answers it (once started). */
export function s3ForFile(): () => S3Server {
  let s3: S3Server | undefined;
  beforeAll(async () => {
    s3 = await startS3();
  });
  afterAll(async () => {
    await s3?.close();
  });
  return () => s3!;
}
