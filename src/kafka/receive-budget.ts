/**
 * The bytes the Kafka listener holds of requests received and not yet answered, over all its connections, and
 * their bound (as Kafka's `queued.max.request.bytes` bounds its request memory pool). A connection counts every
 * chunk it receives and gives the bytes back as each of its frames has been handled (or all at once when it
 * closes). While the budget is exhausted, a connection between two frames stops reading (socket.pause()) and
 * waits here, to be resumed once answers free enough: backpressure, as Kafka mutes a channel when its pool is out
 * of memory, nothing refused. A connection in the middle of a frame reads it to its end (as Kafka reads a request
 * whose buffer it already allocated), so a frame larger than the bound still completes, and the bound is exceeded
 * by at most the frames in progress.
 */
export class ReceiveBudget {
  private used = 0;
  /** How the connections paused here are resumed. */
  private readonly waiting = new Set<() => void>();

  /** @param maxBytes the bound, bytes (> 0) */
  constructor(readonly maxBytes: number) {}

  /** Bytes received and not yet handled, over every connection. */
  get bytes(): number {
    return this.used;
  }

  /** Connections not reading until the budget frees. */
  get paused(): number {
    return this.waiting.size;
  }

  /** Whether the bytes held reached the bound: a connection between frames must not read more. */
  get exhausted(): boolean {
    return this.used >= this.maxBytes;
  }

  /** Counts `n` bytes received. */
  take(n: number): void {
    this.used += n;
  }

  /** Gives back `n` bytes; below the bound again, every connection waiting is resumed (once). */
  release(n: number): void {
    this.used -= n;
    if (this.exhausted || this.waiting.size === 0) return;
    const resumes = [...this.waiting];
    this.waiting.clear();
    for (const resume of resumes) resume();
  }

  /** Calls `resume` once the budget is below its bound again (a connection that paused its reading). */
  wait(resume: () => void): void {
    this.waiting.add(resume);
  }

  /** Forgets a waiting connection (it closed). */
  forget(resume: () => void): void {
    this.waiting.delete(resume);
  }
}
