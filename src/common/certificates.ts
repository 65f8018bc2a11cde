/**
 * Certificates as the client's TLS settings and the broker's TLS listener both check them.
 */
import { X509Certificate } from 'node:crypto';

/** Whether `pem` holds an X.509 certificate (node:crypto parses it). */
export function isCertificate(pem: Buffer): boolean {
  try {
    new X509Certificate(pem);
    return true;
  } catch {
    return false;
  }
}
