/**
 * Object storage for the cluster's log (docs/cluster.md): log objects are written once under a key never used
 * before, read by byte ranges, listed (the orphan sweep) and deleted (merges, retention). No conditional PUT is
 * relied on (not every S3-compatible server has them): fencing lives in PostgreSQL ({@link Sequencer}).
 *
 * {@link S3ObjectStore} is the engine: `@aws-sdk/client-s3` (a pinned version) against AWS S3 or any
 * S3-compatible server (MinIO, Ceph, Swift's s3api, s3rver), named by `s3://BUCKET[/PREFIX]?endpoint=URL[&region=R]`.
 * Credentials come from the standard AWS environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
 * `AWS_SESSION_TOKEN`) or the SDK's other default sources.
 */
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { OnelogError } from '../../protocol/errors.js';
import type { S3Location } from './s3-location.js';

/** A {@link S3ObjectStore.probe} request still unanswered this long is abandoned, ms (the caller has given up on it before). */
const PROBE_ABORT_MS = 10_000;

/** One listed object. */
export interface ObjectInfo {
  key: string;
  sizeBytes: number;
  /** ms since the epoch, the server's clock */
  lastModified: number;
}

/** What the cluster's log needs of an object store. */
export interface ObjectStore {
  /** Writes `body` under `key` (a key never used before), durably once it resolves. */
  put(key: string, body: Buffer): Promise<void>;
  /**
   * The object's bytes, or `length` of them from `position`.
   * @throws OnelogError `NOT_FOUND` if there is no such object
   */
  get(key: string, range?: { position: number; length: number }): Promise<Buffer>;
  /** Every object whose key starts with `prefix`, in key order. */
  list(prefix: string): AsyncIterable<ObjectInfo>;
  /** Deletes objects (missing ones are no error). */
  delete(keys: readonly string[]): Promise<void>;
  close(): void;
}

/**
 * Told of each request an {@link S3ObjectStore} made: its action (`put`, `get`, `list` (a page), `delete` (up to 1,000
 * keys)), how long it took, seconds (the SDK's retries included), and whether it failed (a missing object is no
 * failure).
 */
export type ObjectStoreObserver = (action: 'put' | 'get' | 'list' | 'delete', seconds: number, failed: boolean) => void;

export class S3ObjectStore implements ObjectStore {
  private readonly client: S3Client;
  /** {@link probe}'s: one attempt a request. */
  private readonly probeClient: S3Client;

  /**
   * @param listPageKeys keys a list request asks for at most (S3's MaxKeys), 1 to 1000. @default 1000
   * @param observe told of each request (the broker's object store metrics). @default none
   */
  constructor(private readonly location: S3Location, private readonly listPageKeys = 1000, private readonly observe?: ObjectStoreObserver) {
    this.client = S3ObjectStore.client(location, 3);
    this.probeClient = S3ObjectStore.client(location, 1);
  }

  /** An SDK client of `location` that tries each request `maxAttempts` times. */
  private static client(location: S3Location, maxAttempts: number): S3Client {
    return new S3Client({
      region: location.region,
      ...(location.endpoint === undefined ? {} : { endpoint: location.endpoint, forcePathStyle: true }),
      // Checksums only where an operation requires them: several S3-compatible servers refuse (or corrupt)
      // bodies sent with the SDK's default flexible checksums (aws-chunked trailers).
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts,
    });
  }

  async put(key: string, body: Buffer): Promise<void> {
    await this.call('put', key, () => this.client.send(new PutObjectCommand({
      Bucket: this.location.bucket, Key: this.location.prefix + key, Body: body, ContentLength: body.length,
    })));
  }

  /**
   * Checks that the bucket answers (the broker's `/health`): one ListObjectsV2 of at most one key, tried once (no SDK
   * retry, so a server that refuses connections fails at once). It does not bound its own time: the caller does.
   * @throws OnelogError `STORAGE_ERROR` when the server fails or refuses the bucket
   */
  async probe(): Promise<void> {
    await this.call('list', 'the bucket (health probe)', () => this.probeClient.send(new ListObjectsV2Command({
      Bucket: this.location.bucket, Prefix: this.location.prefix, MaxKeys: 1,
    }), { abortSignal: AbortSignal.timeout(PROBE_ABORT_MS) }));
  }

  async get(key: string, range?: { position: number; length: number }): Promise<Buffer> {
    const answer = await this.call('get', key, () => this.client.send(new GetObjectCommand({
      Bucket: this.location.bucket, Key: this.location.prefix + key,
      ...(range === undefined ? {} : { Range: `bytes=${range.position}-${range.position + range.length - 1}` }),
    })));
    const bytes = Buffer.from(await this.call('get', key, () => answer.Body!.transformToByteArray(), false));
    if (range !== undefined && bytes.length !== range.length) {
      throw new OnelogError('STORAGE_ERROR', `object store: ${key} answered ${bytes.length} bytes for a range of ${range.length}`, { store: 's3', key, ...range });
    }
    return bytes;
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    // Pages go on after the last key listed (StartAfter) rather than by continuation token, which some
    // S3-compatible servers answer wrongly (s3rver fails with InternalError).
    let after: string | undefined;
    for (;;) {
      const page = await this.call('list', prefix, () => this.client.send(new ListObjectsV2Command({
        Bucket: this.location.bucket, Prefix: this.location.prefix + prefix, MaxKeys: this.listPageKeys, ...(after === undefined ? {} : { StartAfter: after }),
      })));
      const contents = page.Contents ?? [];
      for (const o of contents) {
        yield { key: o.Key!.slice(this.location.prefix.length), sizeBytes: o.Size ?? 0, lastModified: o.LastModified?.getTime() ?? 0 };
      }
      if (!page.IsTruncated || contents.length === 0) return;
      after = contents[contents.length - 1]!.Key;
    }
  }

  async delete(keys: readonly string[]): Promise<void> {
    // At most 1,000 keys a request (S3's limit).
    for (let i = 0; i < keys.length; i += 1000) {
      const part = keys.slice(i, i + 1000);
      const answer = await this.call('delete', part[0]!, () => this.client.send(new DeleteObjectsCommand({
        Bucket: this.location.bucket, Delete: { Objects: part.map((k) => ({ Key: this.location.prefix + k })), Quiet: true },
      })));
      const failed = (answer.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (failed.length > 0) {
        throw new OnelogError('STORAGE_ERROR', `object store: deleting ${failed.length} object(s) failed: ${failed[0]!.Code} ${failed[0]!.Message}`, { store: 's3', key: failed[0]!.Key });
      }
    }
  }

  close(): void {
    this.client.destroy();
    this.probeClient.destroy();
  }

  /** Runs one request, told to {@link observe} unless `observed` is false (a GET's body, read after its request was told). */
  private async call<T>(action: 'put' | 'get' | 'list' | 'delete', key: string, work: () => Promise<T>, observed = true): Promise<T> {
    const began = performance.now();
    try {
      const result = await work();
      if (observed) this.observe?.(action, (performance.now() - began) / 1000, false);
      return result;
    } catch (err) {
      const missing = err instanceof S3ServiceException && err.name === 'NoSuchKey';
      this.observe?.(action, (performance.now() - began) / 1000, !missing);
      if (missing) {
        throw new OnelogError('NOT_FOUND', `object store: no object ${key} in bucket ${this.location.bucket}`, { store: 's3', key });
      }
      const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
      throw new OnelogError('STORAGE_ERROR', `object store (S3): ${action} of ${key} failed: ${message}`, { store: 's3', action, key });
    }
  }
}
