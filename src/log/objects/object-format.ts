/**
 * The layout of a log object in object storage (docs/cluster.md): one object holds the batches of many
 * partitions, written by one broker in one flush window, under a key never used before.
 *
 * ```
 * chunk 0 | chunk 1 | ... | footer (JSON) | uint32be(footer bytes) | "OLG1"
 * ```
 *
 * A chunk is one partition's batches, contiguous, each a Kafka RecordBatch v2 exactly as the producer's batch
 * was accepted. Offsets are not known when the object is written (the sequencer assigns them at commit, after
 * the PUT), so every batch is written with base offset 0; a reader stamps the offsets into the batches it
 * reads ({@link stampChunk}): the chunk's first offset comes from its index row, each next batch starts after
 * the one before (lastOffsetDelta + 1). The base offset lies outside the CRC (which covers attributes onward),
 * so stamping leaves every batch valid. The footer names each chunk (topic, partition, position, length, the
 * offsets it takes, its largest timestamp), so a merge or a repair can read an object without the index.
 */
import { LOG_OVERHEAD, readBatchHeader, setBaseOffset, validateBatch } from '../../protocol/record-batch.js';
import { OnelogError } from '../../protocol/errors.js';

/** The object's last 4 bytes. */
const MAGIC = Buffer.from('OLG1');
const TRAILER_BYTES = 8;

/** One partition's batches, as a flush collected them. */
export interface ChunkInput {
  topic: string;
  partition: number;
  /** Encoded batches (RecordBatch v2), each whole; their base offsets are overwritten with 0. */
  batches: readonly Buffer[];
}

/** Where a chunk lies in an object, and what it holds. */
export interface ChunkLayout {
  topic: string;
  partition: number;
  /** Byte position in the object. */
  position: number;
  /** Bytes. */
  length: number;
  /** Offsets its batches take (sum of lastOffsetDelta + 1). */
  offsets: number;
  /** Records in it. */
  records: number;
  /** Largest batch maxTimestamp, ms. */
  maxTimestamp: number;
}

/**
 * Lays chunks out into one object body.
 * @throws OnelogError `CORRUPT_MESSAGE` for a batch that is not one whole, valid RecordBatch v2; `INVALID_REQUEST`
 *   for a chunk without batches
 */
export function buildObject(inputs: readonly ChunkInput[]): { body: Buffer; chunks: ChunkLayout[] } {
  const chunks: ChunkLayout[] = [];
  const parts: Buffer[] = [];
  let position = 0;
  for (const input of inputs) {
    if (input.batches.length === 0) {
      throw new OnelogError('INVALID_REQUEST', `chunk of ${input.topic}/${input.partition} has no batch`, { topic: input.topic, partition: input.partition });
    }
    let length = 0;
    let offsets = 0;
    let records = 0;
    let maxTimestamp = -1;
    for (const batch of input.batches) {
      const invalid = validateBatch(batch);
      if (typeof invalid === 'string' || invalid !== batch.length) {
        throw new OnelogError('CORRUPT_MESSAGE', `a batch of ${input.topic}/${input.partition} is not one whole record batch: ` +
          (typeof invalid === 'string' ? invalid : `${batch.length} bytes hold ${invalid}`), { topic: input.topic, partition: input.partition });
      }
      const header = readBatchHeader(batch);
      setBaseOffset(batch, 0);
      offsets += header.lastOffsetDelta + 1;
      records += header.recordCount;
      if (header.maxTimestamp > maxTimestamp) maxTimestamp = header.maxTimestamp;
      length += batch.length;
      parts.push(batch);
    }
    chunks.push({ topic: input.topic, partition: input.partition, position, length, offsets, records, maxTimestamp });
    position += length;
  }
  const footer = Buffer.from(JSON.stringify({ version: 1, chunks }), 'utf8');
  const trailer = Buffer.alloc(TRAILER_BYTES);
  trailer.writeUInt32BE(footer.length, 0);
  MAGIC.copy(trailer, 4);
  return { body: Buffer.concat([...parts, footer, trailer]), chunks };
}

/** The chunks an object's footer names. @throws OnelogError `CORRUPT_MESSAGE` if the object does not end in a footer */
export function readFooter(object: Buffer): ChunkLayout[] {
  const where = { bytes: object.length };
  if (object.length < TRAILER_BYTES || !object.subarray(object.length - 4).equals(MAGIC)) {
    throw new OnelogError('CORRUPT_MESSAGE', 'not a onelog log object: it does not end in "OLG1"', where);
  }
  const footerBytes = object.readUInt32BE(object.length - TRAILER_BYTES);
  const start = object.length - TRAILER_BYTES - footerBytes;
  if (start < 0) throw new OnelogError('CORRUPT_MESSAGE', `log object footer of ${footerBytes} bytes is longer than the object`, where);
  const footer = JSON.parse(object.toString('utf8', start, object.length - TRAILER_BYTES)) as { version: number; chunks: ChunkLayout[] };
  if (footer.version !== 1) throw new OnelogError('CORRUPT_MESSAGE', `log object footer version ${footer.version} is not known`, where);
  return footer.chunks;
}

/**
 * Stamps offsets into a chunk's batches, in place: the first batch at `baseOffset`, each next one after the last
 * offset of the one before. `bytes` is the whole chunk as read (a ranged GET of its index row).
 * @returns the offset after the chunk's last batch
 * @throws OnelogError `CORRUPT_MESSAGE` naming the byte where the batches stop making sense
 */
export function stampChunk(bytes: Buffer, baseOffset: number): number {
  let pos = 0;
  let next = baseOffset;
  while (pos < bytes.length) {
    if (bytes.length - pos < LOG_OVERHEAD) {
      throw new OnelogError('CORRUPT_MESSAGE', `chunk ends in a partial batch header at byte ${pos} of ${bytes.length}`, { position: pos, offset: next });
    }
    const header = readBatchHeader(bytes, pos);
    const end = pos + LOG_OVERHEAD + header.batchLength;
    if (end > bytes.length) {
      throw new OnelogError('CORRUPT_MESSAGE', `batch at byte ${pos} of the chunk runs past its end (${end} > ${bytes.length})`, { position: pos, offset: next });
    }
    setBaseOffset(bytes.subarray(pos, end), next);
    next += header.lastOffsetDelta + 1;
    pos = end;
  }
  return next;
}
