/**
 * The per-partition table of groups' positions and health that `groups describe` and `topics describe
 * --groups` print (docs/monitoring.md has each column's meaning).
 */
import type { GroupPartition } from '../protocol/groups.js';
import { printTable } from './common.js';

/** A row's leading cells (topic or group, as the command shows them) and its partition. */
export interface HealthRow {
  lead: Array<string | number | null>;
  partition: GroupPartition;
}

/** Prints `rows` under `leadHeaders` and the health columns; a paused partition's state names the error. */
export function printHealthTable(leadHeaders: string[], rows: readonly HealthRow[]): void {
  printTable(
    [...leadHeaders, 'PARTITION', 'COMMITTED-OFFSET', 'LOG-START-OFFSET', 'HIGH-WATERMARK', 'LAG', 'UNREAD', 'LOST', 'TIME-LAG', 'HEADROOM', 'STATE', 'MEMBER'],
    rows.map(({ lead, partition: p }) => [
      ...lead, p.partition, p.committedOffset, p.logStartOffset, p.highWatermark, p.lag,
      p.unreadRecords === null ? null : `${p.unreadRecordsEstimate ? '~' : ''}${p.unreadRecords}`,
      p.lostRecords, p.timeLagMs === null ? null : duration(p.timeLagMs), headroomText(p),
      p.paused ? `${p.state} (paused: ${p.paused.code})` : p.state, p.memberId,
    ]),
  );
}

/** Headroom in time and/or bytes, or `-` when retention is unlimited. */
function headroomText(p: GroupPartition): string | null {
  const parts = [...(p.headroomMs !== null ? [duration(p.headroomMs)] : []), ...(p.headroomBytes !== null ? [bytes(p.headroomBytes)] : [])];
  return parts.length === 0 ? null : parts.join(' / ');
}

/** `950ms`, `42s`, `5m12s`, `3h04m`, `2d03h`; negative with a leading `-`. */
export function duration(ms: number): string {
  if (ms < 0) return `-${duration(-ms)}`;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${pad(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86_400)}d${pad(Math.floor(s / 3600) % 24)}h`;
}

/** `512B`, `12.0KiB`, `3.5MiB`, `1.2GiB`; negative with a leading `-`. */
export function bytes(n: number): string {
  if (n < 0) return `-${bytes(-n)}`;
  if (n < 1024) return `${n}B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)}${units[u]}`;
}
