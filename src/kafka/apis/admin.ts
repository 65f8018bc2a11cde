/**
 * The admin APIs over onelog's: CreateTopics (19; one replica, settings by Kafka's names), DeleteTopics (20; by
 * name, or v6 by id), ListGroups (16),
 * DescribeGroups (15; members with their assignments, assigned by onelog's coordinator), DeleteRecords (21),
 * DeleteGroups (42), DescribeConfigs (32; a topic's settings, a group's configs), IncrementalAlterConfigs (44; a
 * group's configs: group-configs.ts) and OffsetForLeaderEpoch (23; one leader epoch, 0, ending at the high watermark).
 */
import { OnelogError } from '../../protocol/errors.js';
import { DEFAULT_TOPIC_CONFIG, parseKafkaConfig, TOPIC_SETTINGS } from '../../protocol/topic-config.js';
import type { TopicConfig } from '../../protocol/topic-config.js';
import { KAFKA_ERROR, kafkaCodeOf, kafkaErrorCode } from '../errors.js';
import {
  createTopicsRequest, createTopicsResponse, deleteTopicsRequest, deleteTopicsResponse, deleteGroupsRequest, deleteGroupsResponse, deleteRecordsRequest, deleteRecordsResponse,
  describeConfigsRequest, describeConfigsResponse, describeGroupsRequest, describeGroupsResponse, incrementalAlterConfigsRequest,
  incrementalAlterConfigsResponse, listGroupsRequest, listGroupsResponse, offsetForLeaderEpochRequest, offsetForLeaderEpochResponse,
} from '../messages/admin.js';
import { checkGroupConfig, GROUP_CONFIGS, shareSettings } from '../group-configs.js';
import { writeAssignment } from './groups.js';
import { sweep } from './share-groups.js';
import type { KafkaApi } from './api.js';

const TOPIC_RESOURCE = 2;
const GROUP_RESOURCE = 32;
/** DescribeConfigs' config sources: a group's config set for it, and Kafka's default. */
const DYNAMIC_GROUP_CONFIG = 8;
const DEFAULT_CONFIG = 5;
/** The topic id answered where there is none (onelog has no topic ids). */
const ZERO_UUID = '0'.repeat(32);

/** The Kafka code of an OnelogError; anything else is thrown (the connection closes). */
function codeOf(err: unknown, context: 'data' | 'group' = 'data'): number {
  if (!(err instanceof OnelogError)) throw err;
  return kafkaErrorCode(err, context);
}

export const createTopics: KafkaApi = {
  key: 19, name: 'CreateTopics', minVersion: 2, maxVersion: 7, request: createTopicsRequest, response: createTopicsResponse,
  async handle(request, { api }) {
    const topics = request.topics as Array<{
      name: string; numPartitions: number; replicationFactor: number; assignments: Array<{ partitionIndex: number; brokerIds: number[] }>;
      configs: Array<{ name: string; value: string | null }>;
    }>;
    return {
      throttleTimeMs: 0,
      topics: await Promise.all(topics.map(async (t) => {
        const answer = { name: t.name, errorCode: 0, errorMessage: null as string | null, numPartitions: -1, replicationFactor: -1, configs: null };
        const refused = (errorCode: number, errorMessage: string) => ({ ...answer, errorCode, errorMessage });
        if (t.replicationFactor > 1) return refused(KAFKA_ERROR.INVALID_REPLICATION_FACTOR, 'onelog keeps one replica: use replication factor 1 or -1');
        // An explicit assignment (as Kafka's): its partitions, 0 to n-1, make the count; one replica each.
        const assigned = t.assignments ?? [];
        if (assigned.length > 0) {
          if (t.numPartitions !== -1 || t.replicationFactor !== -1) {
            return refused(kafkaCodeOf('INVALID_REQUEST'), 'give either numPartitions and replicationFactor or a replica assignment, not both (set them to -1)');
          }
          const indexes = assigned.map((a) => a.partitionIndex).sort((a, b) => a - b);
          if (indexes.some((p, i) => p !== i)) return refused(KAFKA_ERROR.INVALID_REPLICA_ASSIGNMENT, 'an assignment\'s partitions must be 0 to n-1, each once');
          if (assigned.some((a) => a.brokerIds.length !== 1)) return refused(KAFKA_ERROR.INVALID_REPLICATION_FACTOR, 'onelog keeps one replica: assign each partition one broker');
        }
        try {
          const config = parseKafkaConfig(t.configs.filter((c) => c.value !== null).map((c) => `${c.name}=${c.value}`));
          if (request.validateOnly) return answer;
          const partitions = assigned.length > 0 ? assigned.length : t.numPartitions < 0 ? 1 : t.numPartitions;
          const created = await api.createTopic({ topic: t.name, partitions, config });
          return { ...answer, numPartitions: created.partitions.length, replicationFactor: 1 };
        } catch (err) {
          return { ...answer, errorCode: codeOf(err), errorMessage: (err as Error).message };
        }
      })),
    };
  },
};

export const deleteTopics: KafkaApi = {
  key: 20, name: 'DeleteTopics', minVersion: 1, maxVersion: 6, request: deleteTopicsRequest, response: deleteTopicsResponse,
  async handle(request, { api, header, topicIds }) {
    const names = header.apiVersion >= 6
      ? (request.topics as Array<{ name: string | null; topicId: string }>)
      : (request.topicNames as string[]).map((name) => ({ name, topicId: ZERO_UUID }));
    return {
      throttleTimeMs: 0,
      responses: await Promise.all(names.map(async ({ name: given, topicId }) => {
        // v6 may name a topic by its id alone (topic-ids.ts).
        const name = given ?? await topicIds.nameOf(api, topicId);
        if (name === null) return { name, topicId, errorCode: KAFKA_ERROR.UNKNOWN_TOPIC_ID, errorMessage: `no topic has id ${topicId}` };
        try {
          const id = await topicIds.idOf(api, name).catch(() => topicId);
          await api.deleteTopic(name);
          return { name, topicId: id, errorCode: 0, errorMessage: null };
        } catch (err) {
          return { name, topicId, errorCode: codeOf(err), errorMessage: (err as Error).message };
        }
      })),
    };
  },
};

export const listGroups: KafkaApi = {
  key: 16, name: 'ListGroups', minVersion: 0, maxVersion: 5, request: listGroupsRequest, response: listGroupsResponse,
  async handle(request, { api }) {
    const states = new Set((request.statesFilter as string[]).map((s) => s.toLowerCase()));
    const types = new Set((request.typesFilter as string[]).map((t) => t.toLowerCase()));
    // A share group is Kafka's type `share` (protocol type `share`); onelog's consumer groups are served as classic ones.
    const groups = (await api.listGroups())
      .map((g) => ({ ...g, kafkaType: g.type === 'share' ? 'share' : 'classic' }))
      .filter((g) => (states.size === 0 || states.has(g.state.toLowerCase())) && (types.size === 0 || types.has(g.kafkaType)));
    return {
      throttleTimeMs: 0, errorCode: 0,
      groups: groups.map((g) => ({ groupId: g.groupId, protocolType: g.type === 'share' ? 'share' : 'consumer', groupState: g.state, groupType: g.kafkaType })),
    };
  },
};

export const describeGroups: KafkaApi = {
  key: 15, name: 'DescribeGroups', minVersion: 0, maxVersion: 5, request: describeGroupsRequest, response: describeGroupsResponse,
  async handle(request, { api, members: kafkaMembers }) {
    return {
      throttleTimeMs: 0,
      groups: await Promise.all((request.groups as string[]).map(async (groupId) => {
        try {
          const d = await api.describeGroup(groupId);
          return {
            errorCode: 0, groupId, groupState: d.state, protocolType: 'consumer', protocolData: d.assignor ?? '',
            members: d.members.map((m) => {
              // A Kafka member is shown by the id its client uses (a static member's new one after a restart).
              const kafka = kafkaMembers.byCoordinatorId(groupId, m.memberId);
              return {
                memberId: kafka?.memberId ?? m.memberId, groupInstanceId: kafka?.groupInstanceId ?? null, clientId: m.clientId, clientHost: '',
                memberMetadata: Buffer.alloc(0), memberAssignment: writeAssignment(m.assignment),
              };
            }),
          };
        } catch (err) {
          // A group that does not exist is Dead, as Kafka answers it.
          if (err instanceof OnelogError && err.code === 'UNKNOWN_GROUP') return { errorCode: 0, groupId, groupState: 'Dead', protocolType: '', protocolData: '', members: [] };
          return { errorCode: codeOf(err, 'group'), groupId, groupState: '', protocolType: '', protocolData: '', members: [] };
        }
      })),
    };
  },
};

export const deleteRecords: KafkaApi = {
  key: 21, name: 'DeleteRecords', minVersion: 0, maxVersion: 2, request: deleteRecordsRequest, response: deleteRecordsResponse,
  async handle(request, { api }) {
    const topics = request.topics as Array<{ name: string; partitions: Array<{ partitionIndex: number; offset: number }> }>;
    return {
      throttleTimeMs: 0,
      topics: await Promise.all(topics.map(async ({ name, partitions }) => ({
        name,
        partitions: await Promise.all(partitions.map(async ({ partitionIndex, offset }) => {
          try {
            // -1 is the high watermark; other negative offsets (-1001, unset) are refused, as Kafka refuses them.
            const done = await api.deleteRecords({ topic: name, partition: partitionIndex, beforeOffset: offset });
            return { partitionIndex, lowWatermark: done.logStartOffset, errorCode: 0 };
          } catch (err) {
            return { partitionIndex, lowWatermark: -1, errorCode: codeOf(err) };
          }
        })),
      }))),
    };
  },
};

export const deleteGroups: KafkaApi = {
  key: 42, name: 'DeleteGroups', minVersion: 0, maxVersion: 2, request: deleteGroupsRequest, response: deleteGroupsResponse,
  async handle(request, ctx) {
    const { api, shareMembers } = ctx;
    await sweep(ctx); // members whose session ended are gone first
    return {
      throttleTimeMs: 0,
      results: await Promise.all((request.groupsNames as string[]).map(async (groupId) => ({
        // A share group's Kafka members are the listener's: one with members is not empty.
        groupId, errorCode: shareMembers.inGroup(groupId).length > 0 ? kafkaCodeOf('NON_EMPTY_GROUP') : await api.deleteGroup(groupId).then(() => {
          shareMembers.forgetGroup(groupId);
          return 0;
        }, (err: unknown) => codeOf(err, 'group')),
      }))),
    };
  },
};

export const describeConfigs: KafkaApi = {
  key: 32, name: 'DescribeConfigs', minVersion: 1, maxVersion: 4, request: describeConfigsRequest, response: describeConfigsResponse,
  async handle(request, { api }) {
    const resources = request.resources as Array<{ resourceType: number; resourceName: string; configurationKeys: string[] | null }>;
    return {
      throttleTimeMs: 0,
      results: await Promise.all(resources.map(async ({ resourceType, resourceName, configurationKeys }) => {
        const answer = { errorCode: 0, errorMessage: null as string | null, resourceType, resourceName, configs: [] as object[] };
        if (resourceType === GROUP_RESOURCE) {
          const set = await api.groupConfigs(resourceName).catch((err: unknown) => codeOf(err, 'group'));
          if (typeof set === 'number') return { ...answer, errorCode: set };
          const wanted = Object.keys(GROUP_CONFIGS).filter((name) => configurationKeys === null || configurationKeys.includes(name));
          return {
            ...answer,
            configs: wanted.map((name) => ({
              name, value: set[name] ?? GROUP_CONFIGS[name]!.default, readOnly: false, configSource: name in set ? DYNAMIC_GROUP_CONFIG : DEFAULT_CONFIG,
              isSensitive: false, synonyms: [], configType: 0, documentation: null,
            })),
          };
        }
        if (resourceType !== TOPIC_RESOURCE) return answer; // a broker's settings: none to tell
        try {
          const { config } = await api.describeTopic(resourceName);
          const wanted = TOPIC_SETTINGS.filter((s) => configurationKeys === null || configurationKeys.includes(s.kafkaName));
          return {
            ...answer,
            configs: wanted.map((s) => ({
              name: s.kafkaName, value: String(config[s.name]), readOnly: false, configSource: 1, isSensitive: false, synonyms: [], configType: 0, documentation: null,
            })),
          };
        } catch (err) {
          return { ...answer, errorCode: codeOf(err), errorMessage: (err as Error).message };
        }
      })),
    };
  },
};

/** IncrementalAlterConfigs' operations. */
const SET = 0;
const DELETE = 1;
const APPEND = 2;
const SUBTRACT = 3;

type ConfigChange = { name: string; configOperation: number; value: string | null };

/**
 * A topic's settings after IncrementalAlterConfigs' changes, by Kafka's names: SET, DELETE (back to onelog's default),
 * and APPEND / SUBTRACT for `cleanup.policy`, the one list setting (`delete`, `compact`, or both).
 * @throws OnelogError `INVALID_CONFIG` naming the setting and what is allowed
 */
function alteredTopicSettings(config: TopicConfig, changes: readonly ConfigChange[]): Partial<TopicConfig> {
  const pairs: string[] = [];
  let policies = new Set(config.cleanupPolicy.split(','));
  for (const c of changes) {
    const setting = TOPIC_SETTINGS.find((t) => t.kafkaName === c.name);
    if (setting === undefined) throw new OnelogError('INVALID_CONFIG', `unknown topic setting ${c.name}: valid names are ${TOPIC_SETTINGS.map((t) => t.kafkaName).join(', ')}`, { setting: c.name });
    if (c.configOperation === SET) pairs.push(`${c.name}=${c.value ?? ''}`);
    else if (c.configOperation === DELETE) pairs.push(`${c.name}=${DEFAULT_TOPIC_CONFIG[setting.name]}`);
    else if ((c.configOperation === APPEND || c.configOperation === SUBTRACT) && setting.name === 'cleanupPolicy') {
      policies = new Set(c.configOperation === APPEND ? [...policies, c.value ?? ''] : [...policies].filter((p) => p !== c.value));
      if (policies.size === 0) throw new OnelogError('INVALID_CONFIG', 'cleanup.policy cannot be left empty: delete, compact, or both');
      pairs.push(`cleanup.policy=${[...policies].sort().join(',')}`);
    } else {
      throw new OnelogError('INVALID_CONFIG', `${c.name}: operation ${c.configOperation} is not one it takes (0 SET, 1 DELETE; 2 APPEND and 3 SUBTRACT for cleanup.policy)`, { setting: c.name });
    }
  }
  return parseKafkaConfig(pairs);
}

/**
 * IncrementalAlterConfigs (44) on topics (as `onelog topics alter`, by Kafka's names) and on groups (group-configs.ts):
 * SET and DELETE of the group configs onelog takes, kept by the broker whether or not the group has members yet, and
 * applied at once to the share subscriptions the group has. A resource whose configs are not all valid changes nothing
 * and answers INVALID_CONFIG naming the first bad one. A broker has no configs to alter (INVALID_REQUEST).
 */
export const incrementalAlterConfigs: KafkaApi = {
  key: 44, name: 'IncrementalAlterConfigs', minVersion: 0, maxVersion: 1, request: incrementalAlterConfigsRequest, response: incrementalAlterConfigsResponse,
  async handle(request, { api }) {
    const resources = request.resources as Array<{ resourceType: number; resourceName: string; configs: Array<{ name: string; configOperation: number; value: string | null }> }>;
    return {
      throttleTimeMs: 0,
      responses: await Promise.all(resources.map(async ({ resourceType, resourceName, configs }) => {
        const answer = { errorCode: 0, errorMessage: null as string | null, resourceType, resourceName };
        if (resourceType === TOPIC_RESOURCE) {
          try {
            const config = alteredTopicSettings((await api.describeTopic(resourceName)).config, configs);
            if (request.validateOnly !== true) await api.alterTopic({ topic: resourceName, config });
            return answer;
          } catch (err) {
            return { ...answer, errorCode: codeOf(err), errorMessage: (err as Error).message };
          }
        }
        if (resourceType !== GROUP_RESOURCE) {
          return { ...answer, errorCode: kafkaCodeOf('INVALID_REQUEST'), errorMessage: 'onelog alters topics and groups over Kafka; a broker has no configs to alter' };
        }
        try {
          const next = { ...await api.groupConfigs(resourceName) };
          for (const c of configs) {
            if (c.configOperation === SET) {
              checkGroupConfig(c.name, c.value ?? '');
              next[c.name] = c.value ?? '';
            } else if (c.configOperation === DELETE) {
              delete next[c.name];
            } else {
              throw new OnelogError('INVALID_CONFIG', `group config ${c.name}: operation ${c.configOperation} is not one a group config takes (0 SET, 1 DELETE)`);
            }
          }
          if (request.validateOnly === true) return answer;
          await api.setGroupConfigs(resourceName, next);
          const group = await api.describeGroup(resourceName);
          // A config deleted is its default again.
          const deleted = configs.filter((c) => c.configOperation === DELETE && GROUP_CONFIGS[c.name] !== undefined);
          const settings = shareSettings({ ...Object.fromEntries(deleted.map((c) => [c.name, GROUP_CONFIGS[c.name]!.default])), ...next });
          for (const s of group.subscriptions.filter((sub) => sub.type === 'share')) await api.subscribe({ groupId: resourceName, topic: s.topic, ...settings });
          return answer;
        } catch (err) {
          return { ...answer, errorCode: codeOf(err, 'group'), errorMessage: (err as Error).message };
        }
      })),
    };
  },
};

export const offsetForLeaderEpoch: KafkaApi = {
  key: 23, name: 'OffsetForLeaderEpoch', minVersion: 2, maxVersion: 4, request: offsetForLeaderEpochRequest, response: offsetForLeaderEpochResponse,
  async handle(request, { api }) {
    const topics = request.topics as Array<{ topic: string; partitions: Array<{ partition: number }> }>;
    return {
      throttleTimeMs: 0,
      topics: await Promise.all(topics.map(async ({ topic, partitions }) => {
        const d = await api.describeTopic(topic).catch((err: unknown) => codeOf(err));
        return {
          topic,
          partitions: partitions.map(({ partition }) => {
            const p = typeof d === 'number' ? undefined : d.partitions[partition];
            if (p === undefined) return { errorCode: typeof d === 'number' ? d : 3, partition, leaderEpoch: -1, endOffset: -1 };
            return { errorCode: 0, partition, leaderEpoch: 0, endOffset: p.highWatermark };
          }),
        };
      })),
    };
  },
};
