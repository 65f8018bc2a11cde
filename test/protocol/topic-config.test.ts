import { describe, expect, it } from 'vitest';
import { DEFAULT_TOPIC_CONFIG, parseKafkaConfig, resolveTopicConfig } from '../../src/protocol/topic-config.js';

describe('topic settings', () => {
  it("takes Kafka's names from the CLI and maps them to the API's", () => {
    expect(parseKafkaConfig(['retention.ms=1000', 'cleanup.policy=compact,delete', 'flush.policy=always', 'segment.bytes=2048']))
      .toEqual({ retentionMs: 1000, cleanupPolicy: 'compact,delete', flushPolicy: 'always', segmentBytes: 2048 });
  });

  it('refuses unknown names and malformed pairs with the list of valid names', () => {
    expect(() => parseKafkaConfig(['retention.hours=3'])).toThrow(/unknown setting retention.hours: valid names are cleanup.policy, retention.ms/);
    expect(() => parseKafkaConfig(['retention.ms'])).toThrow(/expected NAME=VALUE/);
    expect(() => resolveTopicConfig({ retentionHours: 3 })).toThrow(/valid settings are cleanupPolicy, retentionMs/);
  });

  it('checks every value and says what is allowed', () => {
    expect(() => resolveTopicConfig({ retentionMs: -2 })).toThrow(/retentionMs \(retention.ms\) must be an integer >= -1, got -2/);
    expect(() => resolveTopicConfig({ flushPolicy: 'sometimes' })).toThrow(/flushPolicy \(flush.policy\) must be one of always, interval, never/);
    expect(() => resolveTopicConfig(parseKafkaConfig(['flush.ms=soon']))).toThrow(/flushMs \(flush.ms\) must be an integer >= 1, got "soon"/);
    expect(() => resolveTopicConfig({ compressionType: 'brotli' })).toThrow(/producer, none, gzip, snappy, lz4, zstd/);
  });

  it('applies changes over a base and keeps the rest', () => {
    const base = resolveTopicConfig({ retentionMs: 5 });
    expect(resolveTopicConfig({ flushPolicy: 'never' }, base)).toEqual({ ...DEFAULT_TOPIC_CONFIG, retentionMs: 5, flushPolicy: 'never' });
  });
});
