/**
 * `onelog produce TOPIC --file F`: appends every row of an NDJSON or CSV file (plain or gzip, or stdin) as
 * a record, in order, in batches on the binary data path (RecordBatch v2 over a WebSocket); shows a progress
 * bar on a terminal and prints a summary (`--json` for machine output). If a row is bad, the rows before it stay produced and the error names the line.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import type { BinaryApi } from '../client/binary-api.js';
import { OnelogError } from '../protocol/errors.js';
import { action, binaryApiFor, parseInteger } from './common.js';
import type { InputFormat, InputRecord } from './input.js';
import type { LinedBatch } from './produce-batches.js';

interface ProduceOptions {
  file?: string;
  keyField: string[];
  timestampField?: string;
  format?: InputFormat;
  gzip?: boolean;
  batchRecords: number;
  json?: boolean;
}

/** Per-partition counts of a produce run. */
interface PartitionSummary {
  partition: number;
  records: number;
  firstOffset: number;
  lastOffset: number;
}

export function registerProduce(program: Command): void {
  program
    .command('produce <topic>')
    .description('append the rows of an NDJSON or CSV file (plain or .gz; stdin without --file) as records')
    .option('--file <path>', 'input file; - or none reads stdin')
    .option('--key-field <field>', 'field whose value is the key; repeat to join several with |',
      (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--timestamp-field <field>', 'field holding the record time: ISO-8601 or epoch ms')
    .option('--format <format>', 'ndjson | csv (default: from the file extension; ndjson for stdin)')
    .option('--gzip', 'stdin is gzip-compressed')
    .option('--batch-records <n>', 'records per request', parseInteger('--batch-records', 1), 5000)
    .option('--json', 'print the summary as JSON')
    .action(action(async (topic: string, o: ProduceOptions, cmd: Command) => {
      if (o.format !== undefined && o.format !== 'ndjson' && o.format !== 'csv') {
        throw new OnelogError('INVALID_REQUEST', `--format must be ndjson or csv, got ${JSON.stringify(o.format)}`);
      }
      const api = await binaryApiFor(cmd);
      try {
        await produce(api, topic, o);
      } finally {
        api.close();
      }
    }));
}

async function produce(api: BinaryApi, topic: string, o: ProduceOptions): Promise<void> {
  // Fails fast on an unknown topic, before reading anything.
  const partitionCount = (await api.describeTopic(topic)).partitions.length;
  const started = Date.now();
  const fileBytes = o.file && o.file !== '-' ? fs.statSync(o.file).size : 0;
  // Loaded here: the other commands do not load the input parsers, the batch encoder or the progress bar.
  const [{ readRecordBatches }, { ProduceBatches, recordsBefore, REQUEST_BYTES }, { default: cliProgress }] = await Promise.all([
    import('./input.js'), import('./produce-batches.js'), import('cli-progress'),
  ]);
  const bar = process.stderr.isTTY && fileBytes > 0
    ? new cliProgress.SingleBar({ format: 'producing [{bar}] {percentage}% | {records} records | {eta}s left', stream: process.stderr },
      cliProgress.Presets.shades_classic)
    : undefined;
  let bytesRead = 0;
  bar?.start(fileBytes, 0, { records: 0 });

  const partitions = new Map<number, PartitionSummary>();
  let records = 0;
  let valueBytes = 0;
  const store = async (request: readonly LinedBatch[]) => {
    const baseOffsets = await api.produceBatches(topic, request);
    request.forEach(({ partition, lines }, b) => {
      const first = baseOffsets[b]!;
      const s = partitions.get(partition) ?? { partition, records: 0, firstOffset: first, lastOffset: first };
      s.records += lines.length;
      s.lastOffset = first + lines.length - 1;
      partitions.set(partition, s);
      records += lines.length;
    });
    bar?.update(bytesRead, { records });
  };
  /** Sends a request; if the broker refuses one record, the ones before it are sent alone, then the error names its line. */
  const send = async (request: LinedBatch[]) => {
    try {
      await store(request);
    } catch (err) {
      const { index, partition, batchIndex } = err instanceof OnelogError ? err.context : {};
      const batch = typeof batchIndex === 'number' ? request[batchIndex] : request.find((b) => b.partition === partition);
      const line = typeof index === 'number' ? batch?.lines[index] : undefined;
      if (line === undefined) throw err;
      const before = recordsBefore(request, line);
      if (before.length > 0) await store(before);
      const e = err as OnelogError;
      throw new OnelogError(e.code, `line ${line}: ${e.message}`, { ...e.context, line });
    }
  };

  const batches = new ProduceBatches(topic, partitionCount);
  // One request in flight while the next is read: reading and the broker's work overlap, and records still reach
  // each partition in input order.
  let inFlight: Promise<void> = Promise.resolve();
  const sendInTurn = async () => {
    const request = batches.cut();
    await inFlight;
    if (request.length === 0) return;
    inFlight = send(request);
    inFlight.catch(() => {}); // awaited by the next send or at the end
  };
  try {
    const input = readRecordBatches({
      keyFields: o.keyField,
      ...(o.file === undefined ? {} : { file: o.file }),
      ...(o.timestampField === undefined ? {} : { timestampField: o.timestampField }),
      ...(o.format === undefined ? {} : { format: o.format }),
      ...(o.gzip === undefined ? {} : { gzip: o.gzip }),
      onBytes: (b) => (bytesRead = b),
    });
    const chunks = input[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<InputRecord[]>;
      try {
        next = await chunks.next();
      } catch (inputError) {
        // The rows read before a bad one are kept: send them, then report it.
        await sendInTurn();
        await inFlight;
        throw inputError;
      }
      if (next.done) break;
      const now = Date.now();
      for (const { record, line } of next.value) {
        valueBytes += batches.add(record, line, now);
        if (batches.records >= o.batchRecords || batches.bytes >= REQUEST_BYTES) await sendInTurn();
      }
    }
    await sendInTurn();
    await inFlight;
  } catch (err) {
    bar?.stop();
    const kept = `${records} records before it were produced and are kept`;
    if (err instanceof OnelogError) throw new OnelogError(err.code, `${err.message} (${kept})`, { ...err.context, producedRecords: records });
    const code = (err as { code?: unknown }).code;
    throw new OnelogError('INVALID_RECORD', `cannot read the input: ${(err as Error).message}${typeof code === 'string' ? ` (${code})` : ''} (${kept})`, {
      producedRecords: records,
    });
  }
  bar?.stop();

  const durationMs = Date.now() - started;
  const perPartition = [...partitions.values()].sort((a, b) => a.partition - b.partition);
  if (o.json) {
    console.log(JSON.stringify({ topic, records, bytes: valueBytes, durationMs, partitions: perPartition }));
    return;
  }
  const rate = durationMs > 0 ? Math.round((records * 1000) / durationMs) : records;
  console.log(`produced ${records} records (${(valueBytes / 1e6).toFixed(1)} MB) to ${topic} in ${(durationMs / 1000).toFixed(1)} s (${rate} records/s)`);
  for (const p of perPartition) console.log(`  partition ${p.partition}: ${p.records} records, offsets ${p.firstOffset}..${p.lastOffset}`);
}
