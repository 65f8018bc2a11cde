/**
 * `onelog produce TOPIC --file F`: appends every row of an NDJSON or CSV file (plain or gzip, or stdin) as
 * a record, in order, in batches on the binary data path (RecordBatch v2 over a WebSocket); shows a progress
 * bar on a terminal and prints a summary (`--json` for machine output). If a row is bad, the rows before it stay produced and the error names the line.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import type { OnelogApi } from '../protocol/api.js';
import { OnelogError } from '../protocol/errors.js';
import { action, binaryApiFor, parseInteger } from './common.js';
import type { InputFormat, InputRecord } from './input.js';

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

const BATCH_BYTES = 4 * 1024 * 1024;

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

async function produce(api: OnelogApi, topic: string, o: ProduceOptions): Promise<void> {
  await api.describeTopic(topic); // fail fast on an unknown topic, before reading anything
  const started = Date.now();
  const fileBytes = o.file && o.file !== '-' ? fs.statSync(o.file).size : 0;
  // Loaded here: the other commands do not load the input parsers or the progress bar.
  const [{ readRecordBatches }, { default: cliProgress }] = await Promise.all([import('./input.js'), import('cli-progress')]);
  const bar = process.stderr.isTTY && fileBytes > 0
    ? new cliProgress.SingleBar({ format: 'producing [{bar}] {percentage}% | {records} records | {eta}s left', stream: process.stderr },
      cliProgress.Presets.shades_classic)
    : undefined;
  let bytesRead = 0;
  bar?.start(fileBytes, 0, { records: 0 });

  const partitions = new Map<number, PartitionSummary>();
  let records = 0;
  let valueBytes = 0;
  const store = async (items: InputRecord[]) => {
    const result = await api.produce({ topic, records: items.map((i) => i.record) });
    for (const { partition, offset } of result.offsets) {
      const s = partitions.get(partition) ?? { partition, records: 0, firstOffset: offset, lastOffset: offset };
      s.records++;
      s.lastOffset = offset;
      partitions.set(partition, s);
    }
    records += items.length;
    bar?.update(bytesRead, { records });
  };
  /** Sends a batch; if the broker refuses one record, the ones before it are sent alone, then the error names its line. */
  const send = async (items: InputRecord[]) => {
    try {
      await store(items);
    } catch (err) {
      const index = err instanceof OnelogError ? err.context.index : undefined;
      if (typeof index !== 'number' || items[index] === undefined) throw err;
      if (index > 0) await store(items.slice(0, index));
      const e = err as OnelogError;
      throw new OnelogError(e.code, `line ${items[index].line}: ${e.message}`, { ...e.context, line: items[index].line });
    }
  };

  let batch: InputRecord[] = [];
  let batchBytes = 0;
  // One request in flight while the next batch is read: reading and the broker's work overlap, and records
  // still reach each partition in input order.
  let inFlight: Promise<void> = Promise.resolve();
  const sendInTurn = async (items: InputRecord[]) => {
    await inFlight;
    inFlight = send(items);
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
        await inFlight;
        if (batch.length > 0) await send(batch);
        throw inputError;
      }
      if (next.done) break;
      for (const item of next.value) {
        batch.push(item);
        const size = (item.record.key?.length ?? 0) + (item.record.value?.length ?? 0);
        batchBytes += size;
        valueBytes += size;
        if (batch.length >= o.batchRecords || batchBytes >= BATCH_BYTES) {
          await sendInTurn(batch);
          batch = [];
          batchBytes = 0;
        }
      }
    }
    if (batch.length > 0) await sendInTurn(batch);
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
