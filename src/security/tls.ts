/**
 * TLS for the broker's listeners (docs/security.md), with node's tls: `onelog serve --tls-cert FILE --tls-key FILE`
 * serves HTTPS/WSS on `--port` and TLS on `--kafka-port`; `--tls-ca FILE` also asks every client for a certificate
 * signed by that CA and refuses the connection without one (mutual TLS; the principal still comes from the token
 * or SASL). A TLS port answers no plain HTTP: such a connection fails its handshake and is closed.
 */
import fs from 'node:fs';
import tls from 'node:tls';
import { isCertificate } from '../common/certificates.js';
import { OnelogError } from '../protocol/errors.js';

/** What node's `tls.createServer` and `https.createServer` take. */
export interface ServerTls {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
  /** Ask for a client certificate: set with `ca`. */
  requestCert: boolean;
  /** Refuse a client without a valid certificate: set with `ca`. */
  rejectUnauthorized: boolean;
}

/**
 * The TLS settings of `serve --tls-cert --tls-key [--tls-ca]`, or undefined when none is given.
 * @throws OnelogError `INVALID_REQUEST` for a certificate without its key (or the reverse), a CA without both, a
 *   file that cannot be read, or a certificate and key that do not make a TLS context (not PEM, not a pair)
 */
export function loadServerTls(files: { cert?: string | undefined; key?: string | undefined; ca?: string | undefined }): ServerTls | undefined {
  if (files.cert === undefined && files.key === undefined) {
    if (files.ca !== undefined) throw new OnelogError('INVALID_REQUEST', '--tls-ca needs --tls-cert and --tls-key (the server\'s own certificate)');
    return undefined;
  }
  if (files.cert === undefined || files.key === undefined) throw new OnelogError('INVALID_REQUEST', 'TLS needs both --tls-cert FILE and --tls-key FILE');
  const read = (flag: string, file: string) => {
    try {
      return fs.readFileSync(file);
    } catch (err) {
      throw new OnelogError('INVALID_REQUEST', `cannot read ${flag} ${file}: ${(err as Error).message}`, { file });
    }
  };
  const settings: ServerTls = {
    cert: read('--tls-cert', files.cert), key: read('--tls-key', files.key),
    ...(files.ca !== undefined ? { ca: read('--tls-ca', files.ca) } : {}),
    requestCert: files.ca !== undefined, rejectUnauthorized: files.ca !== undefined,
  };
  for (const [flag, pem] of [['--tls-cert', settings.cert], ['--tls-ca', settings.ca]] as const) {
    if (pem !== undefined && !isCertificate(pem)) throw new OnelogError('INVALID_REQUEST', `${flag} is not a PEM certificate`, { flag });
  }
  try {
    tls.createSecureContext(settings);
  } catch (err) {
    throw new OnelogError('INVALID_REQUEST', `--tls-cert, --tls-key and --tls-ca must be PEM files of a certificate and its own key: ${(err as Error).message}`);
  }
  return settings;
}
