/**
 * Metadata (3): the brokers and every requested topic with its partitions, each with one leader (its only replica
 * and in-sync replica) at leader epoch 0. On the embedded default the listener's broker (node 0) is the only broker
 * and leads every partition. In cluster mode (placement.ts) the brokers are the cluster's live brokers with a Kafka
 * listener, by broker id; a partition's leader is its sequencer, the holder of its lease now, and a partition
 * nobody leads (or led by a broker without a live Kafka listener) names this broker, which takes a free lease at
 * the first produce. The controller is this broker. v10+ answers each topic's id (topic-ids.ts), and v12 takes a
 * topic named by its id alone (UNKNOWN_TOPIC_ID for an id no topic has).
 * An unknown topic answers UNKNOWN_TOPIC_OR_PARTITION (3) unless the listener creates topics (auto-create.ts) and the
 * request allows it; a name that could not be a topic's INVALID_TOPIC_EXCEPTION (17), so a producer fails its
 * records at once rather than wait for the topic.
 */
import { OnelogError } from '../../protocol/errors.js';
import { withAutoCreate } from '../auto-create.js';
import { KAFKA_ERROR, kafkaErrorCode } from '../errors.js';
import { metadataRequest, metadataResponse } from '../messages/metadata.js';
import { kafkaNodes, leaderFor } from '../placement.js';
import type { KafkaApi } from './api.js';

export const metadata: KafkaApi = {
  key: 3, name: 'Metadata', minVersion: 1, maxVersion: 12, request: metadataRequest, response: metadataResponse,
  async handle(request, ctx) {
    const { api, advertised, cluster, topicIds } = ctx;
    const wanted = request.topics as Array<{ name: string | null; topicId: string }> | null;
    const byId = new Map<string, string | null>();
    for (const t of wanted ?? []) if (t.name === null) byId.set(t.topicId, await topicIds.nameOf(api, t.topicId));
    const names = wanted === null ? (await api.listTopics()).map((t) => t.topic) : wanted.map((t) => t.name ?? byId.get(t.topicId) ?? null);
    const known = names.filter((n): n is string => n !== null);
    const [placement, leaders] = await Promise.all([kafkaNodes(cluster, advertised), cluster.partitionLeaders(known)]);
    const topics = await Promise.all(names.map(async (name, i) => {
      if (name === null) return { errorCode: KAFKA_ERROR.UNKNOWN_TOPIC_ID, name: null, topicId: wanted![i]!.topicId, isInternal: false, partitions: [] };
      try {
        // Only a topic the client names is created (a request for every topic names none).
        const d = await withAutoCreate(ctx, name, () => api.describeTopic(name), wanted !== null && request.allowAutoTopicCreation !== false);
        return {
          errorCode: 0, name, topicId: topicIds.learn(name, d.createdAt), isInternal: false,
          partitions: d.partitions.map((p) => {
            const leaderId = leaderFor(placement, leaders?.get(name)?.get(p.partition));
            return { errorCode: 0, partitionIndex: p.partition, leaderId, leaderEpoch: 0, replicaNodes: [leaderId], isrNodes: [leaderId], offlineReplicas: [] };
          }),
        };
      } catch (err) {
        if (!(err instanceof OnelogError)) throw err;
        return { errorCode: kafkaErrorCode(err), name, isInternal: false, partitions: [] };
      }
    }));
    return {
      throttleTimeMs: 0, brokers: [...placement.nodes.values()].map((n) => ({ ...n, rack: null })),
      clusterId: 'onelog', controllerId: placement.self, topics,
    };
  },
};
