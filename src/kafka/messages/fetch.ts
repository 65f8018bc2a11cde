/** ListOffsets (2) and Fetch (1): where partitions begin and end, and reading record batches. */
import { field, structs } from '../codec/schema.js';
import type { MessageDefinition } from '../codec/schema.js';

export const listOffsetsRequest: MessageDefinition = {
  name: 'ListOffsetsRequest', versions: '1-9', flexible: '6+',
  fields: [
    field('replicaId', 'int32', '0+'),
    field('isolationLevel', 'int8', '2+'),
    structs('topics', '0+', [
      field('name', 'string', '0+'),
      structs('partitions', '0+', [
        field('partitionIndex', 'int32', '0+'),
        field('currentLeaderEpoch', 'int32', '4+', { default: -1 }),
        field('timestamp', 'int64', '0+'),
      ]),
    ]),
  ],
};

export const listOffsetsResponse: MessageDefinition = {
  name: 'ListOffsetsResponse', versions: '1-9', flexible: '6+',
  fields: [
    field('throttleTimeMs', 'int32', '2+'),
    structs('topics', '0+', [
      field('name', 'string', '0+'),
      structs('partitions', '0+', [
        field('partitionIndex', 'int32', '0+'),
        field('errorCode', 'int16', '0+'),
        field('timestamp', 'int64', '1+', { default: -1 }),
        field('offset', 'int64', '1+', { default: -1 }),
        field('leaderEpoch', 'int32', '4+', { default: -1 }),
      ]),
    ]),
  ],
};

export const fetchRequest: MessageDefinition = {
  name: 'FetchRequest', versions: '4-13', flexible: '12+',
  fields: [
    field('replicaId', 'int32', '0+'),
    field('maxWaitMs', 'int32', '0+'),
    field('minBytes', 'int32', '0+'),
    field('maxBytes', 'int32', '3+', { default: 0x7fffffff }),
    field('isolationLevel', 'int8', '4+'),
    field('sessionId', 'int32', '7+'),
    field('sessionEpoch', 'int32', '7+', { default: -1 }),
    structs('topics', '0+', [
      field('topic', 'string', '0-12'),
      field('topicId', 'uuid', '13+'),
      structs('partitions', '0+', [
        field('partition', 'int32', '0+'),
        field('currentLeaderEpoch', 'int32', '9+', { default: -1 }),
        field('fetchOffset', 'int64', '0+'),
        field('lastFetchedEpoch', 'int32', '12+', { default: -1 }),
        field('logStartOffset', 'int64', '5+', { default: -1 }),
        field('partitionMaxBytes', 'int32', '0+'),
      ]),
    ]),
    structs('forgottenTopicsData', '7+', [field('topic', 'string', '7-12'), field('topicId', 'uuid', '13+'), field('partitions', { array: 'int32' }, '7+')]),
    field('rackId', 'string', '11+'),
  ],
};

export const fetchResponse: MessageDefinition = {
  name: 'FetchResponse', versions: '4-13', flexible: '12+',
  fields: [
    field('throttleTimeMs', 'int32', '1+'),
    field('errorCode', 'int16', '7+'),
    field('sessionId', 'int32', '7+'),
    structs('responses', '0+', [
      field('topic', 'string', '0-12'),
      field('topicId', 'uuid', '13+'),
      structs('partitions', '0+', [
        field('partitionIndex', 'int32', '0+'),
        field('errorCode', 'int16', '0+'),
        field('highWatermark', 'int64', '0+'),
        field('lastStableOffset', 'int64', '4+', { default: -1 }),
        field('logStartOffset', 'int64', '5+', { default: -1 }),
        structs('abortedTransactions', '4+', [field('producerId', 'int64', '4+'), field('firstOffset', 'int64', '4+')], { nullable: '4+' }),
        field('preferredReadReplica', 'int32', '11+', { default: -1 }),
        field('records', 'records', '0+', { nullable: '0+' }),
      ]),
    ]),
  ],
};
