/**
 * FindCoordinator (10): a group's coordinator is this broker on the embedded default (node 0); in cluster mode the
 * holder of the group's lease (placement.ts), or this broker when nobody holds it (it takes the lease at the
 * group's first request); a holder without a live Kafka listener answers COORDINATOR_NOT_AVAILABLE (15, the
 * client asks again). Transactions are not served: a transaction coordinator is not available (15).
 *
 * OffsetCommit (8): a group's offsets, committed through onelog's coordinator. A commit with generation -1 or
 * no member id is a commit without a member (as `onelog consume` without a group session, or Kafka's
 * standalone consumers); a member's is fenced as any member's.
 *
 * OffsetFetch (9): a group's committed offsets; a partition never committed (or a group that does not exist)
 * answers -1, and the client's auto.offset.reset decides.
 */
import { OnelogError } from '../../protocol/errors.js';
import { KAFKA_ERROR, kafkaErrorCode } from '../errors.js';
import {
  findCoordinatorRequest, findCoordinatorResponse, offsetCommitRequest, offsetCommitResponse, offsetFetchRequest, offsetFetchResponse,
} from '../messages/offsets.js';
import { kafkaNodes } from '../placement.js';
import { EARLIEST, LATEST } from './api.js';
import type { KafkaApi, KafkaCluster, KafkaDataApi } from './api.js';

const GROUP_KEY = 0;

export const findCoordinator: KafkaApi = {
  key: 10, name: 'FindCoordinator', minVersion: 0, maxVersion: 6, request: findCoordinatorRequest, response: findCoordinatorResponse,
  async handle(request, { header, advertised, cluster }) {
    const keys = header.apiVersion >= 4 ? request.coordinatorKeys as string[] : [request.key as string];
    const coordinators = request.keyType === GROUP_KEY
      ? await groupCoordinators(cluster, advertised, keys)
      : keys.map(() => notAvailable('onelog does not serve transactions'));
    if (header.apiVersion >= 4) return { throttleTimeMs: 0, coordinators: keys.map((key, i) => ({ key, ...coordinators[i]! })) };
    return { throttleTimeMs: 0, ...coordinators[0]! };
  },
};

interface Coordinator {
  nodeId: number;
  host: string;
  port: number;
  errorCode: number;
  errorMessage: string | null;
}

const notAvailable = (errorMessage: string): Coordinator => ({ nodeId: -1, host: '', port: -1, errorCode: KAFKA_ERROR.COORDINATOR_NOT_AVAILABLE, errorMessage });

/** Each group's coordinator as Kafka clients reach it (see the file's comment). @throws OnelogError `STORAGE_ERROR` */
async function groupCoordinators(cluster: KafkaCluster, advertised: { host: string; port: number }, groupIds: readonly string[]): Promise<Coordinator[]> {
  const placement = await kafkaNodes(cluster, advertised);
  return Promise.all(groupIds.map(async (groupId) => {
    const nodeId = (cluster.brokerId === null ? null : await cluster.groupCoordinator(groupId)) ?? placement.self;
    const node = placement.nodes.get(nodeId);
    return node === undefined
      ? notAvailable(`broker ${nodeId} coordinates group ${groupId} and has no live Kafka listener; retry`)
      : { ...node, errorCode: 0, errorMessage: null };
  }));
}

interface CommitTopic {
  name: string;
  partitions: Array<{ partitionIndex: number; committedOffset: number; committedMetadata: string | null }>;
}

export const offsetCommit: KafkaApi = {
  key: 8, name: 'OffsetCommit', minVersion: 2, maxVersion: 9, request: offsetCommitRequest, response: offsetCommitResponse,
  async handle(request, { api, members }) {
    const groupId = request.groupId as string;
    const generationId = request.generationIdOrMemberEpoch as number;
    const memberId = request.memberId as string;
    // A Kafka member commits with the generation of its last JoinGroup until it rejoins (eager clients commit after
    // REBALANCE_IN_PROGRESS): that is the coordinator's generation for it now.
    const kafka = members.get(groupId, memberId);
    const current = kafka !== undefined && generationId === kafka.kafkaGeneration ? kafka.generation : generationId;
    const member = memberId !== '' && generationId >= 0 ? { memberId: kafka?.coordinatorMemberId ?? memberId, generationId: current } : {};
    // A process another replaced under its group.instance.id commits nothing (KIP-345).
    if (kafka?.fenced) {
      return { throttleTimeMs: 0, topics: (request.topics as CommitTopic[]).map(({ name, partitions }) => ({
        name, partitions: partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: KAFKA_ERROR.FENCED_INSTANCE_ID })),
      })) };
    }
    const topics = await Promise.all((request.topics as CommitTopic[]).map(async ({ name, partitions }) => {
      let errorCode = 0;
      try {
        const offsets = await resolveResets(api, name, partitions);
        await api.commitOffsets({
          groupId, topic: name, ...member,
          offsets: partitions.map((p, i) => ({ partition: p.partitionIndex, offset: offsets[i]!, metadata: p.committedMetadata ?? '' })),
        });
      } catch (err) {
        if (!(err instanceof OnelogError)) throw err;
        errorCode = kafkaErrorCode(err, 'group');
      }
      return { name, partitions: partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })) };
    }));
    return { throttleTimeMs: 0, topics };
  },
};

/**
 * The offsets to commit: a client resetting a partition (kafkajs, after OFFSET_OUT_OF_RANGE) commits -2 for the
 * earliest and -1 for the latest offset; those are the log start offset and the high watermark now (so a reset past
 * deleted records is the commit that records an `offset-jump` alert). Other negative offsets are left to be refused.
 */
async function resolveResets(api: KafkaDataApi, topic: string, partitions: CommitTopic['partitions']): Promise<number[]> {
  if (partitions.every((p) => p.committedOffset >= 0)) return partitions.map((p) => p.committedOffset);
  const { partitions: offsets } = await api.describeTopic(topic);
  return partitions.map(({ partitionIndex, committedOffset }) => {
    const at = offsets[partitionIndex];
    if (at === undefined) return committedOffset;
    return committedOffset === EARLIEST ? at.logStartOffset : committedOffset === LATEST ? at.highWatermark : committedOffset;
  });
}

type FetchTopics = Array<{ name: string; partitionIndexes: number[] }> | null;

/** A group's committed offsets of `topics` (null: every topic it committed), -1 where it has none. */
async function committedOf(api: KafkaDataApi, groupId: string, topics: FetchTopics) {
  const committed = await api.committedOffsets(groupId).catch((err: unknown) => {
    if (err instanceof OnelogError && err.code === 'INVALID_REQUEST') return [];
    throw err;
  });
  const wanted = topics ?? [...new Set(committed.map((c) => c.topic))].map((name) => ({
    name, partitionIndexes: committed.filter((c) => c.topic === name).map((c) => c.partition),
  }));
  return wanted.map(({ name, partitionIndexes }) => ({
    name,
    partitions: partitionIndexes.map((partitionIndex) => {
      const c = committed.find((o) => o.topic === name && o.partition === partitionIndex);
      return { partitionIndex, committedOffset: c?.offset ?? -1, committedLeaderEpoch: -1, metadata: c?.metadata ?? '', errorCode: 0 };
    }),
  }));
}

export const offsetFetch: KafkaApi = {
  key: 9, name: 'OffsetFetch', minVersion: 1, maxVersion: 9, request: offsetFetchRequest, response: offsetFetchResponse,
  async handle(request, { api, header }) {
    // A group the principal may not describe answers GROUP_AUTHORIZATION_FAILED, with no topics.
    const groupOf = (groupId: string, topics: FetchTopics) => committedOf(api, groupId, topics).then(
      (found) => ({ topics: found, errorCode: 0 }),
      (err: unknown) => {
        if (!(err instanceof OnelogError)) throw err;
        return { topics: [], errorCode: kafkaErrorCode(err, 'group') };
      },
    );
    if (header.apiVersion >= 8) {
      const groups = request.groups as Array<{ groupId: string; topics: FetchTopics }>;
      return { throttleTimeMs: 0, groups: await Promise.all(groups.map(async (g) => ({ groupId: g.groupId, ...await groupOf(g.groupId, g.topics) }))) };
    }
    return { throttleTimeMs: 0, ...await groupOf(request.groupId as string, request.topics as FetchTopics) };
  },
};
