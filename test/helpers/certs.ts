/**
 * A test certificate authority made with the openssl command: a CA, a server certificate for 127.0.0.1 and
 * localhost, and a client certificate, each signed by the CA (EC P-256, valid two days), as PEM files.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tmpDir } from './tmp.js';

export interface TestCerts {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

const openssl = (dir: string, args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** Makes a CA and the certificates it signs in a fresh directory. */
export function makeTestCerts(): TestCerts {
  const dir = tmpDir('onelog-certs-');
  openssl(dir, ['req', '-x509', ...EC, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=onelog test CA']);
  const sign = (name: string, cn: string, extensions: string) => {
    fs.writeFileSync(path.join(dir, `${name}.ext`), extensions);
    openssl(dir, ['req', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`]);
    openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`]);
  };
  sign('server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  sign('client', 'alice', 'extendedKeyUsage=clientAuth\n');
  const at = (file: string) => path.join(dir, file);
  return { dir, ca: at('ca.pem'), serverCert: at('server.pem'), serverKey: at('server.key'), clientCert: at('client.pem'), clientKey: at('client.key') };
}
