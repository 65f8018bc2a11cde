/**
 * Bearer tokens: `onelog_<id>_<secret>`, a 16-hex-digit id (to find the user without scanning) and 32 random bytes
 * (base64url). Only the id, a random salt and HMAC-SHA-256(salt, secret) are stored; a token is checked by
 * recomputing the HMAC and comparing in constant time (node:crypto). A token carries 256 random bits, so a fast
 * keyed hash is enough (as GitHub stores its tokens): no password-stretching is needed to resist guessing.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { scramCredential } from './scram.js';

/** What is stored of a token. */
export interface StoredToken {
  tokenId: string;
  tokenSalt: string;
  tokenHash: string;
  /** The SCRAM-SHA-256 credential of the token as a password (Kafka's SASL/SCRAM); null for users made before it. */
  tokenScram: string | null;
}

const TOKEN = /^onelog_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

function hash(salt: string, secret: string): string {
  return createHmac('sha256', Buffer.from(salt, 'hex')).update(secret).digest('hex');
}

/** A new token, and what to store of it. */
export function newToken(): { token: string; stored: StoredToken } {
  const tokenId = randomBytes(8).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  const tokenSalt = randomBytes(16).toString('hex');
  const token = `onelog_${tokenId}_${secret}`;
  return { token, stored: { tokenId, tokenSalt, tokenHash: hash(tokenSalt, secret), tokenScram: scramCredential(token) } };
}

/** The id of a well-formed token, or null. */
export function tokenIdOf(token: string): string | null {
  return TOKEN.exec(token)?.[1] ?? null;
}

/** Whether `token` is the one `stored` was made from (constant time in the secret). */
export function tokenMatches(token: string, stored: StoredToken): boolean {
  const m = TOKEN.exec(token);
  if (m === null || m[1] !== stored.tokenId) return false;
  return timingSafeEqual(Buffer.from(hash(stored.tokenSalt, m[2]!), 'hex'), Buffer.from(stored.tokenHash, 'hex'));
}
