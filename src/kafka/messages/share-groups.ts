/**
 * Share groups on the Kafka protocol (KIP-932, with KIP-1222's renewal in ShareFetch and ShareAcknowledge v2):
 * ShareGroupHeartbeat (76), ShareGroupDescribe (77), ShareFetch (78), ShareAcknowledge (79) and the share-group
 * offsets admin calls DescribeShareGroupOffsets (90) and AlterShareGroupOffsets (91). Every version is flexible.
 * Version 0 of the first four was Kafka 4.0's early access, removed in 4.1: not served.
 */
import { field, structs } from '../codec/schema.js';
import type { Field, MessageDefinition } from '../codec/schema.js';

const leaderIdAndEpoch: Field = { name: 'currentLeader', type: { struct: [field('leaderId', 'int32', '0+'), field('leaderEpoch', 'int32', '0+')] }, versions: '0+' };
const nodeEndpoints = structs('nodeEndpoints', '0+', [
  field('nodeId', 'int32', '0+'), field('host', 'string', '0+'), field('port', 'int32', '0+'), field('rack', 'string', '0+', { nullable: '0+' }),
]);
const acknowledgementBatches = structs('acknowledgementBatches', '0+', [
  field('firstOffset', 'int64', '0+'), field('lastOffset', 'int64', '0+'), field('acknowledgeTypes', { array: 'int8' }, '0+'),
]);
/** The topics of a ShareFetch or ShareAcknowledge, with their partitions' acknowledgements. */
const acknowledgementTopics = structs('topics', '0+', [
  field('topicId', 'uuid', '0+'),
  structs('partitions', '0+', [field('partitionIndex', 'int32', '0+'), acknowledgementBatches]),
]);
const topicPartitions = (extra: Field[] = []) => structs('topicPartitions', '0+', [field('topicId', 'uuid', '0+'), ...extra, field('partitions', { array: 'int32' }, '0+')]);

export const shareGroupHeartbeatRequest: MessageDefinition = {
  name: 'ShareGroupHeartbeatRequest', versions: '1', flexible: '0+',
  fields: [
    field('groupId', 'string', '0+'),
    field('memberId', 'string', '0+'),
    field('memberEpoch', 'int32', '0+'),
    field('rackId', 'string', '0+', { nullable: '0+' }),
    field('subscribedTopicNames', { array: 'string' }, '0+', { nullable: '0+' }),
  ],
};

export const shareGroupHeartbeatResponse: MessageDefinition = {
  name: 'ShareGroupHeartbeatResponse', versions: '1', flexible: '0+',
  fields: [
    field('throttleTimeMs', 'int32', '0+'),
    field('errorCode', 'int16', '0+'),
    field('errorMessage', 'string', '0+', { nullable: '0+' }),
    field('memberId', 'string', '0+', { nullable: '0+' }),
    field('memberEpoch', 'int32', '0+'),
    field('heartbeatIntervalMs', 'int32', '0+'),
    { name: 'assignment', type: { struct: [topicPartitions()] }, versions: '0+', nullable: '0+' },
  ],
};

export const shareGroupDescribeRequest: MessageDefinition = {
  name: 'ShareGroupDescribeRequest', versions: '1', flexible: '0+',
  fields: [field('groupIds', { array: 'string' }, '0+'), field('includeAuthorizedOperations', 'bool', '0+')],
};

export const shareGroupDescribeResponse: MessageDefinition = {
  name: 'ShareGroupDescribeResponse', versions: '1', flexible: '0+',
  fields: [
    field('throttleTimeMs', 'int32', '0+'),
    structs('groups', '0+', [
      field('errorCode', 'int16', '0+'),
      field('errorMessage', 'string', '0+', { nullable: '0+' }),
      field('groupId', 'string', '0+'),
      field('groupState', 'string', '0+'),
      field('groupEpoch', 'int32', '0+'),
      field('assignmentEpoch', 'int32', '0+'),
      field('assignorName', 'string', '0+'),
      structs('members', '0+', [
        field('memberId', 'string', '0+'),
        field('rackId', 'string', '0+', { nullable: '0+' }),
        field('memberEpoch', 'int32', '0+'),
        field('clientId', 'string', '0+'),
        field('clientHost', 'string', '0+'),
        field('subscribedTopicNames', { array: 'string' }, '0+'),
        { name: 'assignment', type: { struct: [topicPartitions([field('topicName', 'string', '0+')])] }, versions: '0+' },
      ]),
      field('authorizedOperations', 'int32', '0+', { default: -2147483648 }),
    ]),
  ],
};

export const shareFetchRequest: MessageDefinition = {
  name: 'ShareFetchRequest', versions: '1-2', flexible: '0+',
  fields: [
    field('groupId', 'string', '0+', { nullable: '0+' }),
    field('memberId', 'string', '0+', { nullable: '0+' }),
    field('shareSessionEpoch', 'int32', '0+'),
    field('maxWaitMs', 'int32', '0+'),
    field('minBytes', 'int32', '0+'),
    field('maxBytes', 'int32', '0+', { default: 0x7fffffff }),
    field('maxRecords', 'int32', '1+'),
    field('batchSize', 'int32', '1+'),
    field('shareAcquireMode', 'int8', '2+'),
    field('isRenewAck', 'bool', '2+'),
    acknowledgementTopics,
    structs('forgottenTopicsData', '0+', [field('topicId', 'uuid', '0+'), field('partitions', { array: 'int32' }, '0+')]),
  ],
};

export const shareFetchResponse: MessageDefinition = {
  name: 'ShareFetchResponse', versions: '1-2', flexible: '0+',
  fields: [
    field('throttleTimeMs', 'int32', '0+'),
    field('errorCode', 'int16', '0+'),
    field('errorMessage', 'string', '0+', { nullable: '0+' }),
    field('acquisitionLockTimeoutMs', 'int32', '1+'),
    structs('responses', '0+', [
      field('topicId', 'uuid', '0+'),
      structs('partitions', '0+', [
        field('partitionIndex', 'int32', '0+'),
        field('errorCode', 'int16', '0+'),
        field('errorMessage', 'string', '0+', { nullable: '0+' }),
        field('acknowledgeErrorCode', 'int16', '0+'),
        field('acknowledgeErrorMessage', 'string', '0+', { nullable: '0+' }),
        leaderIdAndEpoch,
        field('records', 'records', '0+', { nullable: '0+' }),
        structs('acquiredRecords', '0+', [field('firstOffset', 'int64', '0+'), field('lastOffset', 'int64', '0+'), field('deliveryCount', 'int16', '0+')]),
      ]),
    ]),
    nodeEndpoints,
  ],
};

export const shareAcknowledgeRequest: MessageDefinition = {
  name: 'ShareAcknowledgeRequest', versions: '1-2', flexible: '0+',
  fields: [
    field('groupId', 'string', '0+', { nullable: '0+' }),
    field('memberId', 'string', '0+', { nullable: '0+' }),
    field('shareSessionEpoch', 'int32', '0+'),
    field('isRenewAck', 'bool', '2+'),
    acknowledgementTopics,
  ],
};

export const shareAcknowledgeResponse: MessageDefinition = {
  name: 'ShareAcknowledgeResponse', versions: '1-2', flexible: '0+',
  fields: [
    field('throttleTimeMs', 'int32', '0+'),
    field('errorCode', 'int16', '0+'),
    field('errorMessage', 'string', '0+', { nullable: '0+' }),
    field('acquisitionLockTimeoutMs', 'int32', '2+'),
    structs('responses', '0+', [
      field('topicId', 'uuid', '0+'),
      structs('partitions', '0+', [
        field('partitionIndex', 'int32', '0+'),
        field('errorCode', 'int16', '0+'),
        field('errorMessage', 'string', '0+', { nullable: '0+' }),
        leaderIdAndEpoch,
      ]),
    ]),
    nodeEndpoints,
  ],
};

export const describeShareGroupOffsetsRequest: MessageDefinition = {
  name: 'DescribeShareGroupOffsetsRequest', versions: '0-1', flexible: '0+',
  fields: [
    structs('groups', '0+', [
      field('groupId', 'string', '0+'),
      structs('topics', '0+', [field('topicName', 'string', '0+'), field('partitions', { array: 'int32' }, '0+')], { nullable: '0+' }),
    ]),
  ],
};

export const describeShareGroupOffsetsResponse: MessageDefinition = {
  name: 'DescribeShareGroupOffsetsResponse', versions: '0-1', flexible: '0+',
  fields: [
    field('throttleTimeMs', 'int32', '0+'),
    structs('groups', '0+', [
      field('groupId', 'string', '0+'),
      structs('topics', '0+', [
        field('topicName', 'string', '0+'),
        field('topicId', 'uuid', '0+'),
        structs('partitions', '0+', [
          field('partitionIndex', 'int32', '0+'),
          field('startOffset', 'int64', '0+'),
          field('leaderEpoch', 'int32', '0+'),
          field('lag', 'int64', '1+', { default: -1 }),
          field('errorCode', 'int16', '0+'),
          field('errorMessage', 'string', '0+', { nullable: '0+' }),
        ]),
      ]),
      field('errorCode', 'int16', '0+'),
      field('errorMessage', 'string', '0+', { nullable: '0+' }),
    ]),
  ],
};

export const alterShareGroupOffsetsRequest: MessageDefinition = {
  name: 'AlterShareGroupOffsetsRequest', versions: '0', flexible: '0+',
  fields: [
    field('groupId', 'string', '0+'),
    structs('topics', '0+', [
      field('topicName', 'string', '0+'),
      structs('partitions', '0+', [field('partitionIndex', 'int32', '0+'), field('startOffset', 'int64', '0+')]),
    ]),
  ],
};

export const alterShareGroupOffsetsResponse: MessageDefinition = {
  name: 'AlterShareGroupOffsetsResponse', versions: '0', flexible: '0+',
  fields: [
    field('throttleTimeMs', 'int32', '0+'),
    field('errorCode', 'int16', '0+'),
    field('errorMessage', 'string', '0+', { nullable: '0+' }),
    structs('responses', '0+', [
      field('topicName', 'string', '0+'),
      field('topicId', 'uuid', '0+'),
      structs('partitions', '0+', [field('partitionIndex', 'int32', '0+'), field('errorCode', 'int16', '0+'), field('errorMessage', 'string', '0+', { nullable: '0+' })]),
    ]),
  ],
};
