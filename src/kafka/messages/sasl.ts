/** SaslHandshake (key 17) and SaslAuthenticate (key 36): SASL on the Kafka listener (KIP-43, KIP-152). */
import { field } from '../codec/schema.js';
import type { MessageDefinition } from '../codec/schema.js';

export const saslHandshakeRequest: MessageDefinition = {
  name: 'SaslHandshakeRequest', versions: '0-1', flexible: 'none',
  fields: [field('mechanism', 'string', '0+')],
};

export const saslHandshakeResponse: MessageDefinition = {
  name: 'SaslHandshakeResponse', versions: '0-1', flexible: 'none',
  fields: [field('errorCode', 'int16', '0+'), field('mechanisms', { array: 'string' }, '0+')],
};

export const saslAuthenticateRequest: MessageDefinition = {
  name: 'SaslAuthenticateRequest', versions: '0-2', flexible: '2+',
  fields: [field('authBytes', 'bytes', '0+')],
};

export const saslAuthenticateResponse: MessageDefinition = {
  name: 'SaslAuthenticateResponse', versions: '0-2', flexible: '2+',
  fields: [
    field('errorCode', 'int16', '0+'),
    field('errorMessage', 'string', '0+', { nullable: '0+' }),
    field('authBytes', 'bytes', '0+'),
    field('sessionLifetimeMs', 'int64', '1+'),
  ],
};
