import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A certificate and its key as PEM files, and the certificate's text (a client trusts it as its CA). */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
  cert: string;
  key: string;
}

/** A self-signed certificate for 127.0.0.1 and localhost, valid a day, made with openssl. */
export function selfSignedCertificate(prefix = 'waybill-tls-'): TlsFiles {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  return { certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}
