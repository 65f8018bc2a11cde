/**
 * The classic group membership APIs: JoinGroup (11), SyncGroup (14), Heartbeat (12), LeaveGroup (13), and the
 * consumer protocol's subscription and assignment (carried as bytes inside them, each behind a version int16).
 */
import { field, structs } from '../codec/schema.js';
import type { MessageDefinition } from '../codec/schema.js';

export const joinGroupRequest: MessageDefinition = {
  name: 'JoinGroupRequest', versions: '0-9', flexible: '6+',
  fields: [
    field('groupId', 'string', '0+'),
    field('sessionTimeoutMs', 'int32', '0+'),
    field('rebalanceTimeoutMs', 'int32', '1+', { default: -1 }),
    field('memberId', 'string', '0+'),
    field('groupInstanceId', 'string', '5+', { nullable: '5+' }),
    field('protocolType', 'string', '0+'),
    structs('protocols', '0+', [field('name', 'string', '0+'), field('metadata', 'bytes', '0+')]),
    field('reason', 'string', '8+', { nullable: '8+' }),
  ],
};

export const joinGroupResponse: MessageDefinition = {
  name: 'JoinGroupResponse', versions: '0-9', flexible: '6+',
  fields: [
    field('throttleTimeMs', 'int32', '2+'),
    field('errorCode', 'int16', '0+'),
    field('generationId', 'int32', '0+', { default: -1 }),
    field('protocolType', 'string', '7+', { nullable: '7+' }),
    field('protocolName', 'string', '0+', { nullable: '7+' }),
    field('leader', 'string', '0+'),
    field('skipAssignment', 'bool', '9+'),
    field('memberId', 'string', '0+'),
    structs('members', '0+', [field('memberId', 'string', '0+'), field('groupInstanceId', 'string', '5+', { nullable: '5+' }), field('metadata', 'bytes', '0+')]),
  ],
};

export const syncGroupRequest: MessageDefinition = {
  name: 'SyncGroupRequest', versions: '0-5', flexible: '4+',
  fields: [
    field('groupId', 'string', '0+'),
    field('generationId', 'int32', '0+'),
    field('memberId', 'string', '0+'),
    field('groupInstanceId', 'string', '3+', { nullable: '3+' }),
    field('protocolType', 'string', '5+', { nullable: '5+' }),
    field('protocolName', 'string', '5+', { nullable: '5+' }),
    structs('assignments', '0+', [field('memberId', 'string', '0+'), field('assignment', 'bytes', '0+')]),
  ],
};

export const syncGroupResponse: MessageDefinition = {
  name: 'SyncGroupResponse', versions: '0-5', flexible: '4+',
  fields: [
    field('throttleTimeMs', 'int32', '1+'),
    field('errorCode', 'int16', '0+'),
    field('protocolType', 'string', '5+', { nullable: '5+' }),
    field('protocolName', 'string', '5+', { nullable: '5+' }),
    field('assignment', 'bytes', '0+'),
  ],
};

export const heartbeatRequest: MessageDefinition = {
  name: 'HeartbeatRequest', versions: '0-4', flexible: '4+',
  fields: [
    field('groupId', 'string', '0+'),
    field('generationId', 'int32', '0+'),
    field('memberId', 'string', '0+'),
    field('groupInstanceId', 'string', '3+', { nullable: '3+' }),
  ],
};

export const heartbeatResponse: MessageDefinition = {
  name: 'HeartbeatResponse', versions: '0-4', flexible: '4+',
  fields: [field('throttleTimeMs', 'int32', '1+'), field('errorCode', 'int16', '0+')],
};

export const leaveGroupRequest: MessageDefinition = {
  name: 'LeaveGroupRequest', versions: '0-5', flexible: '4+',
  fields: [
    field('groupId', 'string', '0+'),
    field('memberId', 'string', '0-2'),
    structs('members', '3+', [
      field('memberId', 'string', '3+'), field('groupInstanceId', 'string', '3+', { nullable: '3+' }), field('reason', 'string', '5+', { nullable: '5+' }),
    ]),
  ],
};

export const leaveGroupResponse: MessageDefinition = {
  name: 'LeaveGroupResponse', versions: '0-5', flexible: '4+',
  fields: [
    field('throttleTimeMs', 'int32', '1+'),
    field('errorCode', 'int16', '0+'),
    structs('members', '3+', [field('memberId', 'string', '3+'), field('groupInstanceId', 'string', '3+', { nullable: '3+' }), field('errorCode', 'int16', '3+')]),
  ],
};

/** What a consumer sends in JoinGroup: its topics, and (v1+) what it owns (cooperative rebalancing). Never flexible. */
export const consumerProtocolSubscription: MessageDefinition = {
  name: 'ConsumerProtocolSubscription', versions: '0-3', flexible: 'none',
  fields: [
    field('topics', { array: 'string' }, '0+'),
    field('userData', 'bytes', '0+', { nullable: '0+' }),
    structs('ownedPartitions', '1+', [field('topic', 'string', '1+'), field('partitions', { array: 'int32' }, '1+')]),
    field('generationId', 'int32', '2+', { default: -1 }),
    field('rackId', 'string', '3+', { nullable: '3+' }),
  ],
};

/** What a consumer gets in SyncGroup: its partitions. Never flexible. */
export const consumerProtocolAssignment: MessageDefinition = {
  name: 'ConsumerProtocolAssignment', versions: '0-3', flexible: 'none',
  fields: [
    structs('assignedPartitions', '0+', [field('topic', 'string', '0+'), field('partitions', { array: 'int32' }, '0+')]),
    field('userData', 'bytes', '0+', { nullable: '0+' }),
  ],
};
