/**
 * The admin APIs: CreateTopics (19), DeleteTopics (20), ListGroups (16), DescribeGroups (15), DeleteRecords (21), DeleteGroups (42),
 * DescribeConfigs (32) and OffsetForLeaderEpoch (23).
 */
import { field, structs } from '../codec/schema.js';
import type { MessageDefinition } from '../codec/schema.js';

export const createTopicsRequest: MessageDefinition = {
  name: 'CreateTopicsRequest', versions: '2-7', flexible: '5+',
  fields: [
    structs('topics', '0+', [
      field('name', 'string', '0+'),
      field('numPartitions', 'int32', '0+'),
      field('replicationFactor', 'int16', '0+'),
      structs('assignments', '0+', [field('partitionIndex', 'int32', '0+'), field('brokerIds', { array: 'int32' }, '0+')]),
      structs('configs', '0+', [field('name', 'string', '0+'), field('value', 'string', '0+', { nullable: '0+' })]),
    ]),
    field('timeoutMs', 'int32', '0+'),
    field('validateOnly', 'bool', '1+'),
  ],
};

export const createTopicsResponse: MessageDefinition = {
  name: 'CreateTopicsResponse', versions: '2-7', flexible: '5+',
  fields: [
    field('throttleTimeMs', 'int32', '2+'),
    structs('topics', '0+', [
      field('name', 'string', '0+'),
      field('topicId', 'uuid', '7+'),
      field('errorCode', 'int16', '0+'),
      field('errorMessage', 'string', '1+', { nullable: '0+' }),
      field('topicConfigErrorCode', 'int16', '5+', { tag: 0, tagged: '5+' }),
      field('numPartitions', 'int32', '5+', { default: -1 }),
      field('replicationFactor', 'int16', '5+', { default: -1 }),
      structs('configs', '5+', [
        field('name', 'string', '5+'), field('value', 'string', '5+', { nullable: '5+' }), field('readOnly', 'bool', '5+'),
        field('configSource', 'int8', '5+', { default: -1 }), field('isSensitive', 'bool', '5+'),
      ], { nullable: '5+' }),
    ]),
  ],
};

export const deleteTopicsRequest: MessageDefinition = {
  name: 'DeleteTopicsRequest', versions: '1-6', flexible: '4+',
  fields: [
    structs('topics', '6+', [field('name', 'string', '6+', { nullable: '6+' }), field('topicId', 'uuid', '6+')]),
    field('topicNames', { array: 'string' }, '0-5'),
    field('timeoutMs', 'int32', '0+'),
  ],
};

export const deleteTopicsResponse: MessageDefinition = {
  name: 'DeleteTopicsResponse', versions: '1-6', flexible: '4+',
  fields: [
    field('throttleTimeMs', 'int32', '1+'),
    structs('responses', '0+', [
      field('name', 'string', '0+', { nullable: '6+' }),
      field('topicId', 'uuid', '6+'),
      field('errorCode', 'int16', '0+'),
      field('errorMessage', 'string', '5+', { nullable: '5+' }),
    ]),
  ],
};

export const listGroupsRequest: MessageDefinition = {
  name: 'ListGroupsRequest', versions: '0-5', flexible: '3+',
  fields: [field('statesFilter', { array: 'string' }, '4+'), field('typesFilter', { array: 'string' }, '5+')],
};

export const listGroupsResponse: MessageDefinition = {
  name: 'ListGroupsResponse', versions: '0-5', flexible: '3+',
  fields: [
    field('throttleTimeMs', 'int32', '1+'),
    field('errorCode', 'int16', '0+'),
    structs('groups', '0+', [
      field('groupId', 'string', '0+'), field('protocolType', 'string', '0+'), field('groupState', 'string', '4+'), field('groupType', 'string', '5+'),
    ]),
  ],
};

export const describeGroupsRequest: MessageDefinition = {
  name: 'DescribeGroupsRequest', versions: '0-5', flexible: '5+',
  fields: [field('groups', { array: 'string' }, '0+'), field('includeAuthorizedOperations', 'bool', '3+')],
};

export const describeGroupsResponse: MessageDefinition = {
  name: 'DescribeGroupsResponse', versions: '0-5', flexible: '5+',
  fields: [
    field('throttleTimeMs', 'int32', '1+'),
    structs('groups', '0+', [
      field('errorCode', 'int16', '0+'),
      field('groupId', 'string', '0+'),
      field('groupState', 'string', '0+'),
      field('protocolType', 'string', '0+'),
      field('protocolData', 'string', '0+'),
      structs('members', '0+', [
        field('memberId', 'string', '0+'),
        field('groupInstanceId', 'string', '4+', { nullable: '4+' }),
        field('clientId', 'string', '0+'),
        field('clientHost', 'string', '0+'),
        field('memberMetadata', 'bytes', '0+'),
        field('memberAssignment', 'bytes', '0+'),
      ]),
      field('authorizedOperations', 'int32', '3+', { default: -2147483648 }),
    ]),
  ],
};

export const deleteRecordsRequest: MessageDefinition = {
  name: 'DeleteRecordsRequest', versions: '0-2', flexible: '2+',
  fields: [
    structs('topics', '0+', [field('name', 'string', '0+'), structs('partitions', '0+', [field('partitionIndex', 'int32', '0+'), field('offset', 'int64', '0+')])]),
    field('timeoutMs', 'int32', '0+'),
  ],
};

export const deleteRecordsResponse: MessageDefinition = {
  name: 'DeleteRecordsResponse', versions: '0-2', flexible: '2+',
  fields: [
    field('throttleTimeMs', 'int32', '0+'),
    structs('topics', '0+', [
      field('name', 'string', '0+'),
      structs('partitions', '0+', [field('partitionIndex', 'int32', '0+'), field('lowWatermark', 'int64', '0+'), field('errorCode', 'int16', '0+')]),
    ]),
  ],
};

export const deleteGroupsRequest: MessageDefinition = {
  name: 'DeleteGroupsRequest', versions: '0-2', flexible: '2+',
  fields: [field('groupsNames', { array: 'string' }, '0+')],
};

export const deleteGroupsResponse: MessageDefinition = {
  name: 'DeleteGroupsResponse', versions: '0-2', flexible: '2+',
  fields: [field('throttleTimeMs', 'int32', '0+'), structs('results', '0+', [field('groupId', 'string', '0+'), field('errorCode', 'int16', '0+')])],
};

export const describeConfigsRequest: MessageDefinition = {
  name: 'DescribeConfigsRequest', versions: '1-4', flexible: '4+',
  fields: [
    structs('resources', '0+', [
      field('resourceType', 'int8', '0+'), field('resourceName', 'string', '0+'), field('configurationKeys', { array: 'string' }, '0+', { nullable: '0+' }),
    ]),
    field('includeSynonyms', 'bool', '1+'),
    field('includeDocumentation', 'bool', '3+'),
  ],
};

export const describeConfigsResponse: MessageDefinition = {
  name: 'DescribeConfigsResponse', versions: '1-4', flexible: '4+',
  fields: [
    field('throttleTimeMs', 'int32', '0+'),
    structs('results', '0+', [
      field('errorCode', 'int16', '0+'),
      field('errorMessage', 'string', '0+', { nullable: '0+' }),
      field('resourceType', 'int8', '0+'),
      field('resourceName', 'string', '0+'),
      structs('configs', '0+', [
        field('name', 'string', '0+'),
        field('value', 'string', '0+', { nullable: '0+' }),
        field('readOnly', 'bool', '0+'),
        field('configSource', 'int8', '1+', { default: -1 }),
        field('isSensitive', 'bool', '0+'),
        structs('synonyms', '1+', [field('name', 'string', '1+'), field('value', 'string', '1+', { nullable: '1+' }), field('source', 'int8', '1+')]),
        field('configType', 'int8', '3+'),
        field('documentation', 'string', '3+', { nullable: '3+' }),
      ]),
    ]),
  ],
};

export const offsetForLeaderEpochRequest: MessageDefinition = {
  name: 'OffsetForLeaderEpochRequest', versions: '2-4', flexible: '4+',
  fields: [
    field('replicaId', 'int32', '3+', { default: -2 }),
    structs('topics', '0+', [
      field('topic', 'string', '0+'),
      structs('partitions', '0+', [
        field('partition', 'int32', '0+'), field('currentLeaderEpoch', 'int32', '2+', { default: -1 }), field('leaderEpoch', 'int32', '0+'),
      ]),
    ]),
  ],
};

export const offsetForLeaderEpochResponse: MessageDefinition = {
  name: 'OffsetForLeaderEpochResponse', versions: '2-4', flexible: '4+',
  fields: [
    field('throttleTimeMs', 'int32', '2+'),
    structs('topics', '0+', [
      field('topic', 'string', '0+'),
      structs('partitions', '0+', [
        field('errorCode', 'int16', '0+'), field('partition', 'int32', '0+'), field('leaderEpoch', 'int32', '1+', { default: -1 }),
        field('endOffset', 'int64', '0+', { default: -1 }),
      ]),
    ]),
  ],
};

export const incrementalAlterConfigsRequest: MessageDefinition = {
  name: 'IncrementalAlterConfigsRequest', versions: '0-1', flexible: '1+',
  fields: [
    structs('resources', '0+', [
      field('resourceType', 'int8', '0+'),
      field('resourceName', 'string', '0+'),
      structs('configs', '0+', [field('name', 'string', '0+'), field('configOperation', 'int8', '0+'), field('value', 'string', '0+', { nullable: '0+' })]),
    ]),
    field('validateOnly', 'bool', '0+'),
  ],
};

export const incrementalAlterConfigsResponse: MessageDefinition = {
  name: 'IncrementalAlterConfigsResponse', versions: '0-1', flexible: '1+',
  fields: [
    field('throttleTimeMs', 'int32', '0+'),
    structs('responses', '0+', [
      field('errorCode', 'int16', '0+'),
      field('errorMessage', 'string', '0+', { nullable: '0+' }),
      field('resourceType', 'int8', '0+'),
      field('resourceName', 'string', '0+'),
    ]),
  ],
};
