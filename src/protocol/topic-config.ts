/**
 * Per-topic settings: one registry giving each setting its Kafka name (for the CLI), its API name
 * (camelCased, unit last), its default and its check. Pure: used by the broker, the catalog and the CLI.
 */
import { OnelogError } from './errors.js';
import { CLEANUP_POLICIES } from './types.js';
import type { CleanupPolicy } from './types.js';

/** When appended records reach the disk (onelog's flush.policy). */
export type FlushPolicy = 'always' | 'interval' | 'never';
export const FLUSH_POLICIES: readonly FlushPolicy[] = ['always', 'interval', 'never'];

/** Batch compression codec; `producer` keeps whatever the producer sent (Kafka's compression.type). */
export type CompressionType = 'producer' | 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';
export const COMPRESSION_TYPES: readonly CompressionType[] = ['producer', 'none', 'gzip', 'snappy', 'lz4', 'zstd'];

/** Per-topic settings, with Kafka's names camelCased. */
export interface TopicConfig {
  /** Kafka's cleanup.policy. @default 'delete' */
  cleanupPolicy: CleanupPolicy;
  /** Kafka's retention.ms, ms; -1 = unlimited. @default 604800000 (7 days) */
  retentionMs: number;
  /** Kafka's retention.bytes, bytes per partition; -1 = unlimited. @default -1 */
  retentionBytes: number;
  /** Kafka's segment.bytes: roll to a new segment past this size. @default 1073741824 (1 GiB) */
  segmentBytes: number;
  /** Kafka's segment.ms: roll a segment this old, ms. @default 604800000 (7 days) */
  segmentMs: number;
  /** Kafka's delete.retention.ms: how long a tombstone survives compaction, ms. @default 86400000 (1 day) */
  deleteRetentionMs: number;
  /** Kafka's min.compaction.lag.ms: records younger than this are not compacted, ms. @default 0 */
  minCompactionLagMs: number;
  /** onelog's flush.policy: `always` (acknowledge after fdatasync), `interval`, `never` (the OS decides). @default 'interval' */
  flushPolicy: FlushPolicy;
  /** Kafka's flush.ms: with `interval`, fdatasync at least this often, ms. @default 50 */
  flushMs: number;
  /** Kafka's flush.messages: with `interval`, also fdatasync after this many records; -1 = no count trigger. @default -1 */
  flushMessages: number;
  /** Kafka's compression.type. @default 'producer' */
  compressionType: CompressionType;
}

type Check = (value: unknown, name: string) => void;

const integer = (min: number, max = Number.MAX_SAFE_INTEGER): Check => (value, name) => {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`;
    throw new OnelogError('INVALID_CONFIG', `${name} must be ${range}, got ${JSON.stringify(value)}`, { setting: name, value });
  }
};

const oneOf = (allowed: readonly string[]): Check => (value, name) => {
  if (typeof value !== 'string' || !allowed.includes(value)) {
    throw new OnelogError('INVALID_CONFIG', `${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`, {
      setting: name, value,
    });
  }
};

/** One setting of the registry. */
interface Setting {
  name: keyof TopicConfig;
  kafkaName: string;
  check: Check;
  numeric: boolean;
}

/** Every topic setting, in the order `topics describe` shows them. */
export const TOPIC_SETTINGS: readonly Setting[] = [
  { name: 'cleanupPolicy', kafkaName: 'cleanup.policy', check: oneOf(CLEANUP_POLICIES), numeric: false },
  { name: 'retentionMs', kafkaName: 'retention.ms', check: integer(-1), numeric: true },
  { name: 'retentionBytes', kafkaName: 'retention.bytes', check: integer(-1), numeric: true },
  { name: 'segmentBytes', kafkaName: 'segment.bytes', check: integer(14, 2 ** 31 - 1), numeric: true },
  { name: 'segmentMs', kafkaName: 'segment.ms', check: integer(1), numeric: true },
  { name: 'deleteRetentionMs', kafkaName: 'delete.retention.ms', check: integer(0), numeric: true },
  { name: 'minCompactionLagMs', kafkaName: 'min.compaction.lag.ms', check: integer(0), numeric: true },
  { name: 'flushPolicy', kafkaName: 'flush.policy', check: oneOf(FLUSH_POLICIES), numeric: false },
  { name: 'flushMs', kafkaName: 'flush.ms', check: integer(1), numeric: true },
  { name: 'flushMessages', kafkaName: 'flush.messages', check: integer(-1), numeric: true },
  { name: 'compressionType', kafkaName: 'compression.type', check: oneOf(COMPRESSION_TYPES), numeric: false },
];

/** Defaults of a new topic: Kafka's, but for the flush policy (an fdatasync every 50 ms). */
export const DEFAULT_TOPIC_CONFIG: TopicConfig = {
  cleanupPolicy: 'delete',
  retentionMs: 7 * 24 * 3600 * 1000,
  retentionBytes: -1,
  segmentBytes: 1024 * 1024 * 1024,
  segmentMs: 7 * 24 * 3600 * 1000,
  deleteRetentionMs: 24 * 3600 * 1000,
  minCompactionLagMs: 0,
  flushPolicy: 'interval',
  flushMs: 50,
  flushMessages: -1,
  compressionType: 'producer',
};

/** Just the settings of an object that carries them among other fields (such as a catalog row). */
export function pickTopicConfig(from: TopicConfig): TopicConfig {
  return Object.fromEntries(TOPIC_SETTINGS.map((s) => [s.name, from[s.name]])) as unknown as TopicConfig;
}

/**
 * `base` with `changes` applied, every value checked.
 * @param changes settings by API name
 * @throws OnelogError `INVALID_CONFIG` naming an unknown setting (with the valid names) or a bad value (with what is allowed)
 */
export function resolveTopicConfig(changes: Record<string, unknown>, base: TopicConfig = DEFAULT_TOPIC_CONFIG): TopicConfig {
  const byName = new Map(TOPIC_SETTINGS.map((s) => [s.name as string, s]));
  for (const name of Object.keys(changes)) {
    if (!byName.has(name)) {
      throw new OnelogError(
        'INVALID_CONFIG',
        `unknown topic setting ${name}: valid settings are ${TOPIC_SETTINGS.map((s) => s.name).join(', ')}`,
        { setting: name },
      );
    }
  }
  const config = { ...base, ...changes } as TopicConfig;
  for (const s of TOPIC_SETTINGS) s.check(config[s.name], `${s.name} (${s.kafkaName})`);
  return config;
}

/**
 * `NAME=VALUE` pairs with Kafka's names (as the CLI takes them) to settings by API name. Values are not
 * checked here beyond their syntax: {@link resolveTopicConfig} does that.
 * @throws OnelogError `INVALID_CONFIG` for a malformed pair or an unknown name, listing the valid names
 */
export function parseKafkaConfig(pairs: readonly string[]): Partial<TopicConfig> {
  const byKafka = new Map(TOPIC_SETTINGS.map((s) => [s.kafkaName, s]));
  const out: Record<string, string | number> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const setting = eq < 0 ? undefined : byKafka.get(pair.slice(0, eq));
    if (setting === undefined) {
      const what = eq < 0 ? `expected NAME=VALUE, got ${JSON.stringify(pair)}` : `unknown setting ${pair.slice(0, eq)}`;
      throw new OnelogError('INVALID_CONFIG', `${what}: valid names are ${[...byKafka.keys()].join(', ')}`, {
        setting: eq < 0 ? pair : pair.slice(0, eq),
      });
    }
    const text = pair.slice(eq + 1).trim();
    out[setting.name] = setting.numeric && /^-?\d+$/.test(text) ? Number(text) : text;
  }
  return out as Partial<TopicConfig>;
}
