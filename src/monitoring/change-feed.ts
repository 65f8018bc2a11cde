/**
 * The broker's changes as they happen (records appended, offsets moved, alerts raised, resolved and acknowledged,
 * evaluations, topics and groups created, changed and deleted), told to whoever watches: the HTTP server's event
 * streams (`GET /events`), which the web console reloads its pages on. Synchronous and in memory: a change is told
 * to the watchers of this broker only, at once, and never kept.
 */
import type { Logger } from '../common/logger.js';
import type { BrokerChange, ChangeSource } from '../protocol/changes.js';

export class ChangeFeed implements ChangeSource {
  private readonly listeners = new Set<(change: BrokerChange) => void>();

  constructor(private readonly logger: Logger) {}

  /** Tells every watcher of `change`; a watcher that throws is logged and the others are still told. */
  publish(change: BrokerChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (err) {
        this.logger.warn({ err: (err as Error).message, change: change.type }, 'a change watcher failed');
      }
    }
  }

  watchChanges(listener: (change: BrokerChange) => void): () => void {
    const own = (change: BrokerChange) => listener(change); // one registration per call, even of the same function
    this.listeners.add(own);
    return () => void this.listeners.delete(own);
  }
}
