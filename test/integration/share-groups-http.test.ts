/**
 * Share groups over the HTTP JSON API and over the binary data path on a real server socket: two members acquire the Wikipedia edits of one
 * partition side by side (each record to one of them), acknowledge them, and every edit is accepted once; a record
 * acknowledged by a member that does not hold it answers INVALID_RECORD_STATE for its partition; from the CLI,
 * groups create --type share shows the group's settings.
 */
import { describe, expect, it } from 'vitest';
import { BinaryApi } from '../../src/client/binary-api.js';
import { HttpApi } from '../../src/client/http-api.js';
import { runCli } from '../helpers/processes.js';
import { serveSecured } from '../helpers/secured-broker.js';
import { readEdits } from '../helpers/wikiticker.js';

describe.each([['HTTP', HttpApi], ['the binary data path', BinaryApi]])('share groups over %s', (_, Api) => {
  it('two members acquire one partition side by side; every edit is accepted once, key, value and timestamp as produced', async () => {
    const { url } = await serveSecured({ insecure: true });
    const api = new Api(url);
    const edits = readEdits().slice(0, 1000);
    await api.createTopic({ topic: 'edits', partitions: 1 });
    await api.produce({ topic: 'edits', records: edits.map((e) => ({ key: Buffer.from(e.key), value: Buffer.from(e.value), timestamp: e.timestamp, partition: 0 })) });
    const created = await runCli(url, ['groups', 'create', 'indexers', '--topic', 'edits', '--type', 'share', '--start', 'earliest', '--lock-ms', '60000', '--json']);
    expect(JSON.parse(created.stdout)).toMatchObject({ subscription: { type: 'share', share: { lockMs: 60_000, ordering: 'none', maxInFlightRecords: 2000 }, maxDeliveries: 5 } });

    const accepted: number[] = [];
    const values = new Map<number, string>();
    for (let round = 0; accepted.length < edits.length && round < 100; round++) {
      for (const memberId of ['a', 'b']) {
        const { records, lockMs } = await api.shareFetch({ groupId: 'indexers', topic: 'edits', memberId, maxRecords: 70 });
        expect(lockMs).toBe(60_000);
        for (const r of records) {
          expect(r.deliveryCount).toBe(1);
          expect([r.partition, r.key!.toString(), r.timestamp]).toEqual([0, edits[r.offset]!.key, edits[r.offset]!.timestamp]);
          values.set(r.offset, r.value!.toString());
        }
        if (records.length === 0) continue;
        const result = await api.shareAcknowledge({ groupId: 'indexers', topic: 'edits', memberId, acks: records.map((r) => ({ partition: 0, offset: r.offset, type: 'accept' as const })) });
        expect(result.partitions).toEqual([{ partition: 0 }]);
        accepted.push(...records.map((r) => r.offset));
      }
    }
    expect(accepted.sort((x, y) => x - y)).toEqual(edits.map((_, i) => i));
    expect([...values.entries()].sort((x, y) => x[0] - y[0]).map(([, v]) => v)).toEqual(edits.map((e) => e.value));

    await api.produce({ topic: 'edits', records: [{ key: null, value: Buffer.from('late'), partition: 0 }] });
    const [late] = (await api.shareFetch({ groupId: 'indexers', topic: 'edits', memberId: 'a' })).records;
    const wrong = await api.shareAcknowledge({ groupId: 'indexers', topic: 'edits', memberId: 'b', acks: [{ partition: 0, offset: late!.offset, type: 'accept' }] });
    expect(wrong.partitions).toMatchObject([{ partition: 0, error: { code: 'INVALID_RECORD_STATE', offset: 1000 } }]);
    api.close();
  });
});
