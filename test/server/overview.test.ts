/**
 * `GET /overview` and `GET /cluster` (docs/monitoring.md "Console: overview", docs/cluster.md) on the embedded default,
 * over real HTTP: the Wikipedia edits make the largest topic; a stalled group comes before a lagging one before one
 * caught up; the cluster is this one broker, leading every partition and coordinating every group, with no lease; a
 * user sees only what it may describe, and the cluster only with describe on it.
 */
import { describe, expect, it } from 'vitest';
import { HttpApi } from '../../src/client/http-api.js';
import { ManualClock } from '../../src/common/clock.js';
import { runCli } from '../helpers/processes.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { readEdits } from '../helpers/wikiticker.js';

describe('GET /overview and GET /cluster', () => {
  it('lists topics by size, groups worst first and the active alerts; describes the embedded broker', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
    const { url, broker } = await serveSecured({ broker: { clock, monitoring: { alertCheckIntervalMs: 0 } } });
    const opsToken = (await new HttpApi(url, { token: '' }).createUser('ops')).token;
    const ops = new HttpApi(url, { token: opsToken });
    await ops.createTopic({ topic: 'edits', partitions: 3, config: { retentionMs: -1 } });
    await ops.createTopic({ topic: 'small', partitions: 1 });
    const edits = readEdits();
    await ops.produce({ topic: 'edits', records: edits.map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp })) });
    await ops.produce({ topic: 'small', records: [{ key: null, value: Buffer.from('one') }] });
    const topic = await ops.describeTopic('edits');
    for (const [groupId, share] of [['caught-up', 1], ['near', 0.9], ['far', 0.2]] as const) {
      await ops.subscribe({ groupId, topic: 'edits', startPolicy: 'earliest', stallMs: 1000 });
      await ops.commitOffsets({ groupId, topic: 'edits', offsets: topic.partitions.map((p) => ({ partition: p.partition, offset: Math.floor(p.highWatermark * share) })) });
    }
    clock.advance(2000);
    await ops.commitOffsets({ groupId: 'near', topic: 'edits', offsets: topic.partitions.map((p) => ({ partition: p.partition, offset: Math.floor(p.highWatermark * 0.9) })) });
    await broker.evaluateAlerts(); // far has not committed for stallMs: stalled; near committed just now: lagging

    const overview = await ops.overview();
    expect(overview.topics.map((t) => t.topic)).toEqual(['edits', 'small']);
    expect(overview.topics[0]).toMatchObject({ partitions: 3, records: edits.length });
    expect(overview.topics[0]!.sizeBytes).toBe(topic.partitions.reduce((sum, p) => sum + p.sizeBytes!, 0));
    expect(overview.groups.map((g) => [g.groupId, g.worstAlert, g.worstState])).toEqual([
      ['far', 'consumer-stalled', 'stalled'], ['near', null, 'lagging'], ['caught-up', null, 'ok'],
    ]);
    const far = overview.groups[0]!;
    const described = await ops.describeGroup('far');
    expect(far).toMatchObject({ totalLag: described.totalLag, maxTimeLagMs: described.maxTimeLag!.timeLagMs, activeAlerts: 3, assessed: true });
    expect(overview.alerts.map((a) => [a.groupId, a.kind])).toEqual(Array(3).fill(['far', 'consumer-stalled']));
    expect([overview.topicCount, overview.groupCount, overview.activeAlertCount]).toEqual([2, 3, 3]);
    expect(overview.topics[0]!.rates).toEqual({ produceRecordsPerSec: 0, produceBytesPerSec: 0, consumeRecordsPerSec: 0, consumeBytesPerSec: 0 }); // the minute is not over
    // Rates average the last 5 complete minutes, counted where the metrics count them: the minute of the produce, and a fetch.
    const fetched = await ops.fetch({ topic: 'edits', partitions: [{ partition: 0, offset: 0 }], maxRecords: 600 });
    clock.advance(60_000);
    const rates = (await ops.overview()).topics[0]!.rates;
    expect(rates.produceRecordsPerSec).toBeCloseTo(edits.length / 300, 6);
    expect(rates.produceBytesPerSec).toBeGreaterThan(rates.produceRecordsPerSec * 100); // each edit is several hundred bytes
    expect(rates.consumeRecordsPerSec).toBeCloseTo(fetched.partitions[0]!.records.length / 300, 6);
    expect((await ops.overview({ limit: 1 })).groups.map((g) => g.groupId)).toEqual(['far']);
    await expect(ops.overview({ limit: 0 })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });

    // A user that may describe the near group and the small topic sees those only; the cluster needs describe on it.
    const { token: viewerToken } = await ops.createUser('viewer');
    for (const [resourceType, resourceName] of [['group', 'near'], ['topic', 'small']] as const) {
      await ops.addAcl({ principal: 'viewer', resourceType, resourceName, operation: 'describe', patternType: 'literal', permission: 'allow' });
    }
    const viewer = new HttpApi(url, { token: viewerToken });
    const seen = await viewer.overview();
    expect([seen.topics.map((t) => t.topic), seen.groups.map((g) => [g.groupId, g.topics]), seen.alerts]).toEqual([['small'], [['near', []]], []]);
    await expect(viewer.describeCluster()).rejects.toMatchObject({ code: 'FORBIDDEN' });

    await broker.advertise({ url, kafkaAddress: '127.0.0.1:9092' });
    const cluster = {
      mode: 'embedded',
      brokers: [{ brokerId: null, url, kafkaAddress: '127.0.0.1:9092', heartbeatAgeMs: 0, partitionsLed: 4, groupsCoordinated: 3, self: true, draining: false }],
      leases: [],
      leasesOmitted: 0,
    };
    expect(await ops.describeCluster()).toEqual(cluster);
    // The CLI prints the same, and a table.
    const token = { ONELOG_TOKEN: opsToken };
    expect(JSON.parse((await runCli(url, ['cluster', 'describe', '--json'], undefined, token)).stdout)).toEqual(cluster);
    const table = (await runCli(url, ['cluster', 'describe'], undefined, token)).stdout.split('\n');
    expect(table.slice(0, 3).map((l) => l.split(/\s{2,}/))).toEqual([
      ['embedded: one broker, leading every partition and coordinating every group'],
      ['BROKER', 'URL', 'KAFKA', 'HEARTBEAT AGE MS', 'PARTITIONS LED', 'GROUPS COORDINATED', 'DRAINING'], ['- *', url, '127.0.0.1:9092', '0', '4', '3', 'no'],
    ]);
    // Nothing to drain on the embedded default; and draining needs alter on the cluster (an admin's).
    const drain = await runCli(url, ['cluster', 'drain', '1'], undefined, token);
    expect([drain.code, drain.stderr.split('\n')[0]]).toEqual([1, 'error INVALID_REQUEST: the embedded default has one broker and nothing to drain (cluster mode: docs/cluster.md)']);
    await expect(viewer.drainBroker(1)).rejects.toMatchObject({ code: 'FORBIDDEN' });
  });
});
