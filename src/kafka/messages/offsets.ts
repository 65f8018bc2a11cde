/** FindCoordinator (10), OffsetCommit (8) and OffsetFetch (9): where a group lives, and its committed offsets. */
import { field, structs } from '../codec/schema.js';
import type { Field, MessageDefinition } from '../codec/schema.js';

export const findCoordinatorRequest: MessageDefinition = {
  name: 'FindCoordinatorRequest', versions: '0-6', flexible: '3+',
  fields: [
    field('key', 'string', '0-3'),
    field('keyType', 'int8', '1+'),
    field('coordinatorKeys', { array: 'string' }, '4+'),
  ],
};

export const findCoordinatorResponse: MessageDefinition = {
  name: 'FindCoordinatorResponse', versions: '0-6', flexible: '3+',
  fields: [
    field('throttleTimeMs', 'int32', '1+'),
    field('errorCode', 'int16', '0-3'),
    field('errorMessage', 'string', '1-3', { nullable: '1-3' }),
    field('nodeId', 'int32', '0-3'),
    field('host', 'string', '0-3'),
    field('port', 'int32', '0-3'),
    structs('coordinators', '4+', [
      field('key', 'string', '4+'),
      field('nodeId', 'int32', '4+'),
      field('host', 'string', '4+'),
      field('port', 'int32', '4+'),
      field('errorCode', 'int16', '4+'),
      field('errorMessage', 'string', '4+', { nullable: '4+' }),
    ]),
  ],
};

export const offsetCommitRequest: MessageDefinition = {
  name: 'OffsetCommitRequest', versions: '2-9', flexible: '8+',
  fields: [
    field('groupId', 'string', '0+'),
    field('generationIdOrMemberEpoch', 'int32', '1+', { default: -1 }),
    field('memberId', 'string', '1+'),
    field('groupInstanceId', 'string', '7+', { nullable: '7+' }),
    field('retentionTimeMs', 'int64', '2-4', { default: -1 }),
    structs('topics', '0+', [
      field('name', 'string', '0+'),
      structs('partitions', '0+', [
        field('partitionIndex', 'int32', '0+'),
        field('committedOffset', 'int64', '0+'),
        field('committedLeaderEpoch', 'int32', '6+', { default: -1 }),
        field('committedMetadata', 'string', '0+', { nullable: '0+' }),
      ]),
    ]),
  ],
};

export const offsetCommitResponse: MessageDefinition = {
  name: 'OffsetCommitResponse', versions: '2-9', flexible: '8+',
  fields: [
    field('throttleTimeMs', 'int32', '3+'),
    structs('topics', '0+', [
      field('name', 'string', '0+'),
      structs('partitions', '0+', [field('partitionIndex', 'int32', '0+'), field('errorCode', 'int16', '0+')]),
    ]),
  ],
};

/** A committed offset as OffsetFetch answers it, in versions `v` (0-7 per topic; 8+ per group). */
function offsetFetchPartition(v: string, epoch: string): Field[] {
  return [
    field('partitionIndex', 'int32', v),
    field('committedOffset', 'int64', v),
    field('committedLeaderEpoch', 'int32', epoch, { default: -1 }),
    field('metadata', 'string', v, { nullable: v }),
    field('errorCode', 'int16', v),
  ];
}

export const offsetFetchRequest: MessageDefinition = {
  name: 'OffsetFetchRequest', versions: '1-9', flexible: '6+',
  fields: [
    field('groupId', 'string', '0-7'),
    // Null: every topic the group committed.
    structs('topics', '0-7', [field('name', 'string', '0-7'), field('partitionIndexes', { array: 'int32' }, '0-7')], { nullable: '2-7' }),
    structs('groups', '8+', [
      field('groupId', 'string', '8+'),
      field('memberId', 'string', '9+', { nullable: '9+' }),
      field('memberEpoch', 'int32', '9+', { default: -1 }),
      structs('topics', '8+', [field('name', 'string', '8+'), field('partitionIndexes', { array: 'int32' }, '8+')], { nullable: '8+' }),
    ]),
    field('requireStable', 'bool', '7+'),
  ],
};

export const offsetFetchResponse: MessageDefinition = {
  name: 'OffsetFetchResponse', versions: '1-9', flexible: '6+',
  fields: [
    field('throttleTimeMs', 'int32', '3+'),
    structs('topics', '0-7', [field('name', 'string', '0-7'), structs('partitions', '0-7', offsetFetchPartition('0-7', '5-7'))]),
    field('errorCode', 'int16', '2-7'),
    structs('groups', '8+', [
      field('groupId', 'string', '8+'),
      structs('topics', '8+', [field('name', 'string', '8+'), structs('partitions', '8+', offsetFetchPartition('8+', '8+'))]),
      field('errorCode', 'int16', '8+'),
    ]),
  ],
};
