/**
 * SASL on the Kafka listener (docs/security.md): SaslHandshake chooses PLAIN or SCRAM-SHA-256, then SaslAuthenticate
 * carries the mechanism's messages (KIP-152), or, after a SaslHandshake v0, the client sends them as bare
 * size-prefixed tokens ({@link authenticateStep}; librdkafka needs v0 to be served, though it uses v1). The principals
 * are onelog's users: PLAIN takes the user's name and its token as the password; SCRAM-SHA-256 proves the same token
 * without sending it. A failure answers SASL_AUTHENTICATION_FAILED and the connection is closed after the answer.
 */
import { OnelogError } from '../../protocol/errors.js';
import { ScramExchange } from '../../security/scram.js';
import { saslAuthenticateRequest, saslAuthenticateResponse, saslHandshakeRequest, saslHandshakeResponse } from '../messages/sasl.js';
import type { Users } from '../../security/users.js';
import type { KafkaApi, KafkaConnection } from './api.js';

export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256'] as const;
const UNSUPPORTED_SASL_MECHANISM = 33;
const ILLEGAL_SASL_STATE = 34;
const SASL_AUTHENTICATION_FAILED = 58;
const EMPTY = Buffer.alloc(0);

export const saslHandshake: KafkaApi = {
  key: 17, name: 'SaslHandshake', minVersion: 0, maxVersion: 1, request: saslHandshakeRequest, response: saslHandshakeResponse,
  async handle(request, { connection, header }) {
    const mechanisms = [...SASL_MECHANISMS];
    if (connection.principal !== null || connection.mechanism !== null) return { errorCode: ILLEGAL_SASL_STATE, mechanisms };
    const mechanism = request.mechanism as string;
    if (!(SASL_MECHANISMS as readonly string[]).includes(mechanism)) {
      connection.closeAfterAnswer = true;
      return { errorCode: UNSUPPORTED_SASL_MECHANISM, mechanisms };
    }
    connection.mechanism = mechanism as KafkaConnection['mechanism'];
    connection.bareTokens = header.apiVersion === 0;
    return { errorCode: 0, mechanisms };
  },
};

/**
 * One step of the chosen mechanism: the client's message in, the server's answer out; sets the connection's
 * principal once it authenticated.
 * @throws OnelogError `UNAUTHENTICATED` for a failed authentication, `INVALID_REQUEST` out of order
 */
export function authenticateStep(connection: KafkaConnection, users: Users | undefined, clientMessage: Buffer): Buffer {
  if (users === undefined || connection.mechanism === null || connection.principal !== null) {
    throw new OnelogError('INVALID_REQUEST', 'SASL authentication comes after a SaslHandshake, once per connection');
  }
  const message = clientMessage.toString('utf8');
  if (connection.mechanism === 'PLAIN') {
    // [authzid] NUL authcid NUL passwd (RFC 4616)
    const [, user = '', password = ''] = message.split('\u0000');
    connection.principal = users.authenticatePlain(user, password);
    return EMPTY;
  }
  connection.scram ??= new ScramExchange((user) => users.scramCredentialOf(user));
  if (message.startsWith('c=')) {
    const { user, credential, serverFinal } = connection.scram.final(message);
    connection.principal = users.principalOf(user, credential);
    return Buffer.from(serverFinal);
  }
  return Buffer.from(connection.scram.first(message));
}

export const saslAuthenticate: KafkaApi = {
  key: 36, name: 'SaslAuthenticate', minVersion: 0, maxVersion: 2, request: saslAuthenticateRequest, response: saslAuthenticateResponse,
  async handle(request, { connection, users }) {
    try {
      return { errorCode: 0, errorMessage: null, authBytes: authenticateStep(connection, users, request.authBytes as Buffer), sessionLifetimeMs: 0 };
    } catch (err) {
      if (!(err instanceof OnelogError)) throw err;
      connection.closeAfterAnswer = true;
      return { errorCode: err.code === 'INVALID_REQUEST' ? ILLEGAL_SASL_STATE : SASL_AUTHENTICATION_FAILED, errorMessage: err.message, authBytes: EMPTY, sessionLifetimeMs: 0 };
    }
  },
};
