/**
 * An object store in memory, for the unit tier's runs of the object engine (test/log/logs-contract.test.ts): the
 * {@link ObjectStore} contract of the S3 engine (keys listed in order, ranged reads, missing objects `NOT_FOUND`,
 * deletes of missing keys no error), held in a map. A test double: nothing survives the process, so no broker uses it.
 */
import { OnelogError } from '../../src/protocol/errors.js';
import type { ObjectInfo, ObjectStore } from '../../src/log/objects/object-store.js';

export class MemoryObjectStore implements ObjectStore {
  private readonly objects = new Map<string, { body: Buffer; lastModified: number }>();

  async put(key: string, body: Buffer): Promise<void> {
    this.objects.set(key, { body: Buffer.from(body), lastModified: Date.now() });
  }

  async get(key: string, range?: { position: number; length: number }): Promise<Buffer> {
    const o = this.objects.get(key);
    if (o === undefined) throw new OnelogError('NOT_FOUND', `object store: no object ${key} in memory`, { store: 'memory', key });
    // A copy, as a GET's body is: readers stamp offsets into what they get.
    return Buffer.from(range === undefined ? o.body : o.body.subarray(range.position, range.position + range.length));
  }

  async *list(prefix: string): AsyncIterable<ObjectInfo> {
    const keys = [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort();
    for (const key of keys) {
      const o = this.objects.get(key);
      if (o !== undefined) yield { key, sizeBytes: o.body.length, lastModified: o.lastModified };
    }
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const k of keys) this.objects.delete(k);
  }

  close(): void {
    // Nothing to let go: a store reopened over the same objects (a broker's restart) finds them all.
  }
}
