/**
 * Reloads of a cache from the catalog (users, ACLs), one at a time: two reads on two pool connections may answer in
 * either order, so a slower read begun before a change could otherwise overwrite the cache a later read filled
 * after it. Each reload reads once the previous one finished, and the cache ends as the last read found it.
 */

/**
 * Wraps `read` (which reads the catalog and replaces the cache) so that its calls run one after the other. A call
 * made while a read runs starts the next read after it; calls made while that next one still waits to start join
 * it (it reads after each of them was made). Each call resolves or rejects with the read it joined.
 */
export function serialReloads(read: () => Promise<void>): () => Promise<void> {
  let last: Promise<void> = Promise.resolve();
  let waiting: Promise<void> | null = null;
  return () => {
    if (waiting !== null) return waiting;
    const next = last.catch(() => {}).then(() => {
      waiting = null;
      return read();
    });
    waiting = next;
    last = next;
    return next;
  };
}
