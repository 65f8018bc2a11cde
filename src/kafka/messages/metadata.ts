/** Metadata (key 3): the brokers (one: onelog) and the topics' partitions with their leader; v10+ with topic ids. */
import { field, structs } from '../codec/schema.js';
import type { MessageDefinition } from '../codec/schema.js';

export const metadataRequest: MessageDefinition = {
  name: 'MetadataRequest', versions: '1-12', flexible: '9+',
  fields: [
    // v1+: null asks for every topic, an empty array for none; v10+ names a topic by id (its name null from v12).
    structs('topics', '0+', [field('topicId', 'uuid', '10+'), field('name', 'string', '0+', { nullable: '10+' })], { nullable: '1+' }),
    field('allowAutoTopicCreation', 'bool', '4+', { default: true }),
    field('includeClusterAuthorizedOperations', 'bool', '8-10'),
    field('includeTopicAuthorizedOperations', 'bool', '8+'),
  ],
};

export const metadataResponse: MessageDefinition = {
  name: 'MetadataResponse', versions: '1-12', flexible: '9+',
  fields: [
    field('throttleTimeMs', 'int32', '3+'),
    structs('brokers', '0+', [
      field('nodeId', 'int32', '0+'),
      field('host', 'string', '0+'),
      field('port', 'int32', '0+'),
      field('rack', 'string', '1+', { nullable: '1+' }),
    ]),
    field('clusterId', 'string', '2+', { nullable: '2+' }),
    field('controllerId', 'int32', '1+', { default: -1 }),
    structs('topics', '0+', [
      field('errorCode', 'int16', '0+'),
      field('name', 'string', '0+', { nullable: '12+' }),
      field('topicId', 'uuid', '10+'),
      field('isInternal', 'bool', '1+'),
      structs('partitions', '0+', [
        field('errorCode', 'int16', '0+'),
        field('partitionIndex', 'int32', '0+'),
        field('leaderId', 'int32', '0+'),
        field('leaderEpoch', 'int32', '7+', { default: -1 }),
        field('replicaNodes', { array: 'int32' }, '0+'),
        field('isrNodes', { array: 'int32' }, '0+'),
        field('offlineReplicas', { array: 'int32' }, '5+'),
      ]),
      field('topicAuthorizedOperations', 'int32', '8+', { default: -2147483648 }),
    ]),
    field('clusterAuthorizedOperations', 'int32', '8-10', { default: -2147483648 }),
  ],
};
