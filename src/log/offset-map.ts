/**
 * The key map of log compaction in a fixed amount of memory: Kafka's SkimpyOffsetMap.
 *
 * A key is known by a 128-bit hash of its bytes (the first 16 bytes of its SHA-256), never by the key itself,
 * so every key costs the same {@link OFFSET_MAP_SLOT_BYTES} bytes whatever its length: the hash and the
 * latest offset seen for it. The slots live in one `ArrayBuffer` of at most `bufferBytes`, with open
 * addressing (double hashing over a prime number of slots), filled to at most `loadFactor` of them, as Kafka's
 * `log.cleaner.io.buffer.load.factor`. Once full the map takes no new key ({@link OffsetMap.put} says so):
 * the cleaner then ends the pass there and starts another one (see log-cleaner.ts).
 *
 * Two keys with the same 128-bit hash are one key to the map, so the older record of either would be removed
 * by compaction. Among 20,000,000 keys the odds of any such pair are about 10^-24 (the birthday bound
 * n²/2^129); and finding a key that shares its hash with someone else's needs a second preimage of SHA-256.
 * Kafka uses MD5 here; SHA-256 is as fast through `crypto.hash` (the call dominates, not the digest) and also
 * works where OpenSSL runs in FIPS mode, which refuses MD5.
 */
import crypto from 'node:crypto';
import { OnelogError } from '../protocol/errors.js';

/** Bytes per slot: 16 of key hash, 8 of offset (Kafka's SkimpyOffsetMap: hash size + 8). */
export const OFFSET_MAP_SLOT_BYTES = 24;
/** The fewest bytes of a map: two slots, so that one key fits below any load factor. */
export const MIN_OFFSET_MAP_BYTES = 2 * OFFSET_MAP_SLOT_BYTES;
/** The most bytes of a map: 2 GiB, as Kafka caps each cleaner thread's dedupe buffer (a Java array's bound). */
export const MAX_OFFSET_MAP_BYTES = 2 ** 31;
/** Share of the slots used before the map counts as full: Kafka's `log.cleaner.io.buffer.load.factor`. */
export const DEFAULT_LOAD_FACTOR = 0.9;

/** Uint32 words and float64 words per slot: the hash is words 0-3, the offset (+1) float64 word 2. */
const WORDS = OFFSET_MAP_SLOT_BYTES / 4;
const DOUBLES = OFFSET_MAP_SLOT_BYTES / 8;

/**
 * Checks a map size in bytes.
 * @param name how the setting is called where it came from (an option, a `serve` flag), for the error
 * @throws OnelogError `INVALID_REQUEST` unless an integer from {@link MIN_OFFSET_MAP_BYTES} to
 *   {@link MAX_OFFSET_MAP_BYTES}
 */
export function checkOffsetMapBytes(bytes: number, name = 'dedupeBufferBytes'): number {
  if (!Number.isInteger(bytes) || bytes < MIN_OFFSET_MAP_BYTES || bytes > MAX_OFFSET_MAP_BYTES) {
    throw new OnelogError('INVALID_REQUEST', `${name} must be an integer number of bytes from ${MIN_OFFSET_MAP_BYTES} ` +
      `(two ${OFFSET_MAP_SLOT_BYTES}-byte slots) to ${MAX_OFFSET_MAP_BYTES} (2 GiB), got ${bytes}`);
  }
  return bytes;
}

/**
 * A map from record key to offset in at most `bufferBytes` bytes (see the file's comment). Not thread-safe and
 * not shared: one compaction uses it at a time.
 *
 * Its memory is allocated by {@link reset}, only as much as the keys it is told to expect can need, and given
 * back by {@link release}.
 */
export class OffsetMap {
  /** Slots the whole buffer has room for. */
  readonly maxSlots: number;
  /** The most slots used: the largest prime at most {@link maxSlots}. */
  private readonly topSlots: number;
  private buffer: ArrayBuffer | null = null;
  private words = new Uint32Array(0);
  private doubles = new Float64Array(0);
  /** Slots in use since the last {@link reset} (a prime), and the entries they may hold. */
  private slots = 0;
  private limit = 0;
  private entries = 0;
  // The hash of the key last looked up, as four 32-bit words.
  private h0 = 0;
  private h1 = 0;
  private h2 = 0;
  private h3 = 0;

  /**
   * @param bufferBytes most bytes the slots may take, from {@link MIN_OFFSET_MAP_BYTES} to
   *   {@link MAX_OFFSET_MAP_BYTES}
   * @param loadFactor share of the slots filled before the map is full, above 0 and below 1
   *   @default {@link DEFAULT_LOAD_FACTOR} (0.9)
   * @throws OnelogError `INVALID_REQUEST` for a size or load factor out of bounds
   */
  constructor(
    readonly bufferBytes: number,
    readonly loadFactor = DEFAULT_LOAD_FACTOR,
  ) {
    checkOffsetMapBytes(bufferBytes);
    if (!(loadFactor > 0 && loadFactor < 1)) {
      throw new OnelogError('INVALID_REQUEST', `loadFactor must be above 0 and below 1, got ${loadFactor}`);
    }
    this.maxSlots = Math.floor(bufferBytes / OFFSET_MAP_SLOT_BYTES);
    this.topSlots = primeAtMost(this.maxSlots);
  }

  /** Entries the map holds at most with the whole buffer: `maxSlots × loadFactor` (less one slot kept empty). */
  get maxEntries(): number {
    return entriesOf(this.topSlots, this.loadFactor);
  }

  /** Keys in the map. */
  get size(): number {
    return this.entries;
  }

  /** Keys the map may hold since the last {@link reset}. */
  get capacity(): number {
    return this.limit;
  }

  /** Whether the map holds {@link capacity} keys: it takes no new one. */
  get full(): boolean {
    return this.entries >= this.limit;
  }

  /** Bytes of memory the map holds now (0 once released). */
  get allocatedBytes(): number {
    return this.buffer?.byteLength ?? 0;
  }

  /**
   * Empties the map and sizes it for at most `expectedKeys` keys (an upper bound, e.g. the records to be
   * mapped): the slots are the fewest, prime, that hold them below the load factor, and never more than
   * {@link maxSlots}. Memory is allocated on the first reset, or when the buffer in hand is too small.
   * @param expectedKeys @default as many as the whole buffer holds
   */
  reset(expectedKeys = Infinity): void {
    const wanted = Math.max(2, Math.ceil(Math.max(0, expectedKeys) / this.loadFactor) + 1);
    const slots = wanted >= this.topSlots ? this.topSlots : primeAtLeast(wanted);
    const bytes = slots * OFFSET_MAP_SLOT_BYTES;
    if (this.buffer === null || this.buffer.byteLength < bytes) {
      this.release(); // the old buffer may be collected before the new one is made
      this.buffer = new ArrayBuffer(bytes); // zeroed
      this.words = new Uint32Array(this.buffer);
      this.doubles = new Float64Array(this.buffer);
    } else {
      this.doubles.fill(0, 0, slots * DOUBLES);
    }
    this.slots = slots;
    this.limit = entriesOf(slots, this.loadFactor);
    this.entries = 0;
  }

  /** Gives the memory back; the next {@link reset} allocates again. */
  release(): void {
    this.buffer = null;
    this.words = new Uint32Array(0);
    this.doubles = new Float64Array(0);
    this.slots = 0;
    this.limit = 0;
    this.entries = 0;
  }

  /**
   * Records `offset` as the latest offset of `key`.
   * @param offset a non-negative integer below 2^53 - 1
   * @returns false, storing nothing, when the key is new and the map {@link full}
   */
  put(key: Uint8Array, offset: number): boolean {
    const slot = this.find(key);
    const at = slot * DOUBLES + 2;
    if (this.doubles[at] === 0) {
      if (this.entries >= this.limit) return false;
      const w = slot * WORDS;
      this.words[w] = this.h0;
      this.words[w + 1] = this.h1;
      this.words[w + 2] = this.h2;
      this.words[w + 3] = this.h3;
      this.entries++;
    }
    this.doubles[at] = offset + 1;
    return true;
  }

  /** The latest offset recorded for `key`, or -1 if none. */
  get(key: Uint8Array): number {
    if (this.slots === 0) return -1;
    return this.doubles[this.find(key) * DOUBLES + 2]! - 1;
  }

  /** The slot holding `key`'s hash, or the empty slot where it would go. Needs {@link reset} first. */
  private find(key: Uint8Array): number {
    if (this.slots === 0) throw new Error('OffsetMap used before reset()');
    const digest = crypto.hash('sha256', key, 'binary');
    const h0 = (this.h0 = word(digest, 0));
    const h1 = (this.h1 = word(digest, 4));
    const h2 = (this.h2 = word(digest, 8));
    const h3 = (this.h3 = word(digest, 12));
    const slots = this.slots;
    const words = this.words;
    const doubles = this.doubles;
    // Double hashing: the step is below the (prime) slot count, so the probes visit every slot, and one is
    // always empty (the load factor is below 1): the loop ends.
    let slot = h0 % slots;
    const step = 1 + (h1 % (slots - 1));
    for (;;) {
      if (doubles[slot * DOUBLES + 2] === 0) return slot;
      const w = slot * WORDS;
      if (words[w] === h0 && words[w + 1] === h1 && words[w + 2] === h2 && words[w + 3] === h3) return slot;
      slot += step;
      if (slot >= slots) slot -= slots;
    }
  }
}

/** Entries `slots` slots may hold: `slots × loadFactor`, at least 1 and always leaving one slot empty. */
function entriesOf(slots: number, loadFactor: number): number {
  return Math.max(1, Math.min(slots - 1, Math.floor(slots * loadFactor)));
}

/** Four bytes of a one-byte-per-char digest string as an unsigned 32-bit word. */
function word(digest: string, at: number): number {
  return (digest.charCodeAt(at) | (digest.charCodeAt(at + 1) << 8) | (digest.charCodeAt(at + 2) << 16) | (digest.charCodeAt(at + 3) << 24)) >>> 0;
}

function isPrime(n: number): boolean {
  if (n < 2) return false;
  if (n % 2 === 0) return n === 2;
  for (let d = 3; d * d <= n; d += 2) if (n % d === 0) return false;
  return true;
}

/** The largest prime at most `n` (n >= 2). */
export function primeAtMost(n: number): number {
  let p = n;
  while (!isPrime(p)) p--;
  return p;
}

/** The smallest prime at least `n`. */
function primeAtLeast(n: number): number {
  let p = Math.max(2, n);
  while (!isPrime(p)) p++;
  return p;
}
