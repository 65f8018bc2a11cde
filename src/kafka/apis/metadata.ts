/**
 * Metadata (3): one broker (the listener), every requested topic with its partitions, each led by it at epoch 0.
 * Topics are never auto-created: an unknown one answers UNKNOWN_TOPIC_OR_PARTITION (3).
 */
import { OnelogError } from '../../protocol/errors.js';
import { kafkaErrorCode } from '../errors.js';
import { metadataRequest, metadataResponse } from '../messages/metadata.js';
import { NODE_ID } from './api.js';
import type { KafkaApi } from './api.js';

export const metadata: KafkaApi = {
  key: 3, name: 'Metadata', minVersion: 1, maxVersion: 9, request: metadataRequest, response: metadataResponse,
  async handle(request, { api, advertised }) {
    const wanted = request.topics as Array<{ name: string }> | null;
    const names = wanted === null ? (await api.listTopics()).map((t) => t.topic) : wanted.map((t) => t.name);
    const topics = await Promise.all(names.map(async (name) => {
      try {
        const d = await api.describeTopic(name);
        return {
          errorCode: 0, name, isInternal: false,
          partitions: d.partitions.map((p) => ({
            errorCode: 0, partitionIndex: p.partition, leaderId: NODE_ID, leaderEpoch: 0, replicaNodes: [NODE_ID], isrNodes: [NODE_ID], offlineReplicas: [],
          })),
        };
      } catch (err) {
        if (!(err instanceof OnelogError)) throw err;
        return { errorCode: kafkaErrorCode(err), name, isInternal: false, partitions: [] };
      }
    }));
    return {
      throttleTimeMs: 0, brokers: [{ nodeId: NODE_ID, host: advertised.host, port: advertised.port, rack: null }],
      clusterId: 'onelog', controllerId: NODE_ID, topics,
    };
  },
};
