/** Produce (0) and InitProducerId (22): appending record batches, and idempotent producer identities. */
import { field, structs } from '../codec/schema.js';
import type { MessageDefinition } from '../codec/schema.js';

export const produceRequest: MessageDefinition = {
  name: 'ProduceRequest', versions: '3-11', flexible: '9+',
  fields: [
    field('transactionalId', 'string', '3+', { nullable: '0+' }),
    field('acks', 'int16', '0+'),
    field('timeoutMs', 'int32', '0+'),
    structs('topicData', '0+', [
      field('name', 'string', '0+'),
      structs('partitionData', '0+', [field('index', 'int32', '0+'), field('records', 'records', '0+', { nullable: '0+' })]),
    ]),
  ],
};

export const produceResponse: MessageDefinition = {
  name: 'ProduceResponse', versions: '3-11', flexible: '9+',
  fields: [
    structs('responses', '0+', [
      field('name', 'string', '0+'),
      structs('partitionResponses', '0+', [
        field('index', 'int32', '0+'),
        field('errorCode', 'int16', '0+'),
        field('baseOffset', 'int64', '0+'),
        field('logAppendTimeMs', 'int64', '2+', { default: -1 }),
        field('logStartOffset', 'int64', '5+', { default: -1 }),
        structs('recordErrors', '8+', [field('batchIndex', 'int32', '8+'), field('batchIndexErrorMessage', 'string', '8+', { nullable: '8+' })]),
        field('errorMessage', 'string', '8+', { nullable: '8+' }),
      ]),
    ]),
    field('throttleTimeMs', 'int32', '1+'),
  ],
};

export const initProducerIdRequest: MessageDefinition = {
  name: 'InitProducerIdRequest', versions: '0-5', flexible: '2+',
  fields: [
    field('transactionalId', 'string', '0+', { nullable: '0+' }),
    field('transactionTimeoutMs', 'int32', '0+'),
    field('producerId', 'int64', '3+', { default: -1 }),
    field('producerEpoch', 'int16', '3+', { default: -1 }),
  ],
};

export const initProducerIdResponse: MessageDefinition = {
  name: 'InitProducerIdResponse', versions: '0-5', flexible: '2+',
  fields: [
    field('throttleTimeMs', 'int32', '0+'),
    field('errorCode', 'int16', '0+'),
    field('producerId', 'int64', '0+', { default: -1 }),
    field('producerEpoch', 'int16', '0+'),
  ],
};
