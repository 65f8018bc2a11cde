/**
 * How a client reaches `onelog serve` (docs/security.md): the bearer token and, for `https://` and `wss://`
 * servers, the TLS settings: the CA that signed the server's certificate, and a client certificate for a server
 * started with `--tls-ca`. Shared by the HTTP client, the binary data path and push consumers.
 */
import fs from 'node:fs';
import { isCertificate } from '../common/certificates.js';
import { OnelogError } from '../protocol/errors.js';

/** PEM text or bytes, as node's tls takes them. */
export interface ClientTls {
  /** The CA certificates to trust (instead of the system's). */
  ca?: string | Buffer;
  /** The client certificate and its key (a server started with `--tls-ca` asks for them). */
  cert?: string | Buffer;
  key?: string | Buffer;
}

/** What every request and WebSocket upgrade of a client carries. */
export interface Connection {
  /** `Authorization: Bearer TOKEN`, when there is a token. */
  headers: Readonly<Record<string, string>>;
  tls: ClientTls;
}

/** Options of a client's connection. */
export interface ConnectionOptions {
  /** A user's token. @default env `ONELOG_TOKEN`, else none */
  token?: string;
  /**
   * TLS settings for an `https://` server. @default from the files named by env `ONELOG_CA`, `ONELOG_CERT` and
   * `ONELOG_KEY`, each if set (else the system's CAs and no client certificate)
   */
  tls?: ClientTls;
}

/** The connection `options` ask for, with the environment's defaults. @throws OnelogError `INVALID_REQUEST` for an unreadable file */
export function connectionOf(options: ConnectionOptions = {}): Connection {
  const token = options.token ?? process.env.ONELOG_TOKEN;
  return {
    headers: token ? { authorization: `Bearer ${token}` } : {},
    tls: options.tls ?? readTlsFiles({ ca: process.env.ONELOG_CA, cert: process.env.ONELOG_CERT, key: process.env.ONELOG_KEY }, 'env'),
  };
}

/**
 * Reads the TLS files named by the CLI's flags (`--ca`, `--cert`, `--key`) or the environment (`ONELOG_CA`, ...).
 * @throws OnelogError `INVALID_REQUEST` naming a file that cannot be read, or a certificate without its key
 */
export function readTlsFiles(files: { ca?: string | undefined; cert?: string | undefined; key?: string | undefined }, source: 'flags' | 'env' = 'flags'): ClientTls {
  const nameOf = (name: string) => (source === 'flags' ? `--${name}` : `ONELOG_${name.toUpperCase()}`);
  if (!files.cert !== !files.key) {
    throw new OnelogError('INVALID_REQUEST', `a client certificate needs its key: give both ${nameOf('cert')} and ${nameOf('key')}`);
  }
  const tls: ClientTls = {};
  for (const name of ['ca', 'cert', 'key'] as const) {
    const file = files[name];
    if (!file) continue;
    try {
      tls[name] = fs.readFileSync(file);
    } catch (err) {
      throw new OnelogError('INVALID_REQUEST', `cannot read ${nameOf(name)} ${file}: ${(err as Error).message}`, { file });
    }
    if (name !== 'key' && !isCertificate(tls[name]!)) {
      throw new OnelogError('INVALID_REQUEST', `${nameOf(name)} ${file} is not a PEM certificate`, { file });
    }
  }
  return tls;
}
