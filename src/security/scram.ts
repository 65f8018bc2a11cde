/**
 * SCRAM-SHA-256 (RFC 5802, RFC 7677), the server side, as Kafka's SASL/SCRAM serves it: credentials derived from a
 * user's token when it is made (the token is the password), stored as Kafka stores them (salt, iterations,
 * StoredKey, ServerKey; never the token), and the two-message exchange. Proofs are compared in constant time.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { OnelogError } from '../protocol/errors.js';

/** What is stored to check a SCRAM-SHA-256 exchange. */
export interface ScramCredential {
  salt: Buffer;
  iterations: number;
  storedKey: Buffer;
  serverKey: Buffer;
}

/** Iterations of PBKDF2 (Kafka's default and RFC 7677's minimum). */
const ITERATIONS = 4096;

const hmac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest();

/** The credential of `password`, serialized for the catalog (`salt,iterations,storedKey,serverKey`, base64). */
export function scramCredential(password: string, iterations = ITERATIONS): string {
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const storedKey = createHash('sha256').update(hmac(salted, 'Client Key')).digest();
  const serverKey = hmac(salted, 'Server Key');
  return [salt.toString('base64'), iterations, storedKey.toString('base64'), serverKey.toString('base64')].join(',');
}

export function parseScramCredential(text: string): ScramCredential {
  const [salt, iterations, storedKey, serverKey] = text.split(',');
  return { salt: Buffer.from(salt!, 'base64'), iterations: Number(iterations), storedKey: Buffer.from(storedKey!, 'base64'), serverKey: Buffer.from(serverKey!, 'base64') };
}

const failed = (why: string) => new OnelogError('UNAUTHENTICATED', `SCRAM-SHA-256 authentication failed: ${why}`, {});
/** What every wrong user name or password is told (which one was wrong is not said, so names cannot be probed). */
const WRONG = 'wrong user name or password (a user made before SCRAM was served needs onelog users rotate)';
/** Keys the stand-in credentials of unknown users, so that they answer as a real user with a wrong password would. */
const STAND_IN_KEY = randomBytes(32);

/** The attributes of a SCRAM message (`n=user,r=nonce`). */
function attributes(message: string): Map<string, string> {
  return new Map(message.split(',').map((part) => [part.slice(0, 1), part.slice(2)]));
}

/** One SCRAM-SHA-256 exchange: client-first, server-first, client-final, server-final. */
export class ScramExchange {
  private state: { user: string; credential: ScramCredential; clientFirstBare: string; serverFirst: string; nonce: string } | null = null;

  /** @param credentialOf a user's credential, or undefined (unknown user, or one without SCRAM credentials) */
  constructor(private readonly credentialOf: (user: string) => ScramCredential | undefined) {}

  /**
   * Answers the client-first message (`n,,n=user,r=nonce`) with the server-first.
   * @throws OnelogError `UNAUTHENTICATED` for a malformed message, an unknown user, channel binding asked for
   */
  first(clientFirst: string): string {
    if (!clientFirst.startsWith('n,')) throw failed('channel binding is not supported (use the gs2 header "n,,")');
    const clientFirstBare = clientFirst.slice(clientFirst.indexOf(',', 2) + 1);
    const attrs = attributes(clientFirstBare);
    const user = (attrs.get('n') ?? '').replace(/=2C/g, ',').replace(/=3D/g, '=');
    const clientNonce = attrs.get('r');
    if (!user || !clientNonce) throw failed('the client-first message names no user or nonce');
    // An unknown user goes through the exchange with a stand-in (the same salt each time) and fails at the proof.
    const credential = this.credentialOf(user) ?? {
      salt: createHmac('sha256', STAND_IN_KEY).update(user).digest().subarray(0, 16), iterations: ITERATIONS, storedKey: randomBytes(32), serverKey: randomBytes(32),
    };
    const nonce = clientNonce + randomBytes(18).toString('base64');
    const serverFirst = `r=${nonce},s=${credential.salt.toString('base64')},i=${credential.iterations}`;
    this.state = { user, credential, clientFirstBare, serverFirst, nonce };
    return serverFirst;
  }

  /**
   * Checks the client-final message (`c=biws,r=nonce,p=proof`) and answers the server-final (`v=signature`).
   * @returns the authenticated user, the credential the proof was checked against, and the server-final message
   * @throws OnelogError `UNAUTHENTICATED` for a wrong proof, nonce or order of messages
   */
  final(clientFinal: string): { user: string; credential: ScramCredential; serverFinal: string } {
    if (this.state === null) throw failed('the client-final message came before the client-first');
    const { user, credential, clientFirstBare, serverFirst, nonce } = this.state;
    this.state = null;
    const attrs = attributes(clientFinal);
    const proof = Buffer.from(attrs.get('p') ?? '', 'base64');
    // As Kafka's ScramSaslServer: the nonce must end with the server's (librdkafka sends its own nonce before it).
    if (!(attrs.get('r') ?? '').endsWith(nonce)) throw failed('the nonce does not match');
    const withoutProof = clientFinal.slice(0, clientFinal.lastIndexOf(',p='));
    const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`;
    const clientSignature = hmac(credential.storedKey, authMessage);
    if (proof.length !== clientSignature.length) throw failed('the proof is malformed');
    const clientKey = Buffer.from(proof.map((b, i) => b ^ clientSignature[i]!));
    if (!timingSafeEqual(createHash('sha256').update(clientKey).digest(), credential.storedKey)) throw failed(WRONG);
    return { user, credential, serverFinal: `v=${hmac(credential.serverKey, authMessage).toString('base64')}` };
  }
}
