/**
 * What changed in a broker, as `GET /events` tells the web console (docs/monitoring.md, "Console: live"): enough to
 * know which pages to reload, not the data itself. Pure types.
 */

/**
 * One change:
 * - `records`: records were appended to the topic (produced, or moved there by a nack or a redrive);
 * - `offsets`: the group's committed offsets of the topic moved (a commit or an executed reset);
 * - `alert`: an alert of the group was raised, resolved or acknowledged;
 * - `evaluated`: a pass of the scheduled alert evaluation ended (time lag and headroom move with the clock; in cluster
 *   mode a broker that does not hold `job:alerts` skips the evaluation but takes in the alerts other brokers raised);
 * - `topic`: the topic was created, altered or deleted;
 * - `group`: the group was created or its subscription changed, a member joined or left by a request, or it was deleted.
 */
export type BrokerChange =
  | { type: 'records'; topic: string }
  | { type: 'offsets'; groupId: string; topic: string }
  | { type: 'alert'; groupId: string; topic: string; alertId: number; change: 'raised' | 'resolved' | 'acknowledged' }
  | { type: 'evaluated' }
  | { type: 'topic'; topic: string; change: 'created' | 'altered' | 'deleted' }
  | { type: 'group'; groupId: string; change: 'changed' | 'deleted' };

/** One message of the event stream: the distinct changes since the last one. */
export interface BrokerChanges {
  changes: BrokerChange[];
  /** More changes happened than a message lists: reload everything. */
  truncated: boolean;
}

/** Where changes are heard (the embedded broker is one). */
export interface ChangeSource {
  /**
   * Calls `listener` with every change from now on, synchronously as it happens (it must not throw or block).
   * @returns a function that stops the calls
   */
  watchChanges(listener: (change: BrokerChange) => void): () => void;
}
