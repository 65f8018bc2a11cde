/**
 * Per-principal rates (docs/security.md): token buckets of requests per second and produced bytes per second,
 * as Kafka's request and producer byte-rate quotas. Each bucket holds one second of its rate (the burst). A
 * request needs a whole request token, and a produce a byte bucket not in debt; it then takes what it costs, so
 * one produce larger than a second's worth passes and the next waits until the debt is paid (as Kafka's quotas).
 * A refused request takes nothing. Time comes from a {@link Clock}, so tests drive it by hand.
 */
import type { Clock } from '../common/clock.js';
import { OnelogError } from '../protocol/errors.js';

/** The rates, per principal; 0 = unlimited. */
export interface QuotaRates {
  /** Requests (HTTP requests, data-path frames, Kafka requests) per second. @default 0 */
  requestsPerSec: number;
  /** Produced bytes (request bodies and batches as received) per second. @default 0 */
  produceBytesPerSec: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class Quotas {
  private readonly requests = new Map<string, Bucket>();
  private readonly bytes = new Map<string, Bucket>();

  constructor(private readonly clock: Clock, private readonly rates: QuotaRates) {}

  /** Whether any rate is set (else {@link take} never refuses). */
  get limited(): boolean {
    return this.rates.requestsPerSec > 0 || this.rates.produceBytesPerSec > 0;
  }

  /**
   * Takes one request (unless `countRequest` is false: bytes of a request already counted) and `producedBytes`
   * from `principal`'s buckets.
   * @throws OnelogError `RATE_LIMITED` (retriable) with `retryAfterMs`, the rate passed and its limit; nothing is taken
   */
  take(principal: string, producedBytes = 0, countRequest = true): void {
    const now = this.clock.now();
    const requests = countRequest ? this.refill(this.requests, principal, this.rates.requestsPerSec, now) : undefined;
    const bytes = producedBytes > 0 ? this.refill(this.bytes, principal, this.rates.produceBytesPerSec, now) : undefined;
    if (requests && requests.tokens < 1) throw limited(principal, 'requestsPerSec', this.rates.requestsPerSec, 1 - requests.tokens);
    if (bytes && bytes.tokens <= 0) throw limited(principal, 'produceBytesPerSec', this.rates.produceBytesPerSec, -bytes.tokens);
    if (requests) requests.tokens -= 1;
    if (bytes) bytes.tokens -= producedBytes;
  }

  /** The principal's bucket for `rate`, refilled to now; undefined when the rate is unlimited. */
  private refill(buckets: Map<string, Bucket>, principal: string, rate: number, now: number): Bucket | undefined {
    if (rate <= 0) return undefined;
    let bucket = buckets.get(principal);
    if (bucket === undefined) {
      bucket = { tokens: rate, at: now };
      buckets.set(principal, bucket);
    }
    bucket.tokens = Math.min(rate, bucket.tokens + ((now - bucket.at) * rate) / 1000);
    bucket.at = now;
    return bucket;
  }
}

/** @param missing tokens the bucket lacks before it lets a request through */
function limited(principal: string, quota: string, rate: number, missing: number): OnelogError {
  const retryAfterMs = Math.max(1, Math.ceil((missing * 1000) / rate));
  return new OnelogError('RATE_LIMITED', `${principal} is above its quota of ${rate} ${quota === 'requestsPerSec' ? 'requests' : 'produced bytes'} per second; ` +
    `retry in ${retryAfterMs} ms`, { principal, quota, limit: rate, retryAfterMs });
}
