/**
 * Where the cluster's log objects live, as `serve --log` names it: `s3://BUCKET[/PREFIX]?endpoint=URL[&region=R]`.
 * Apart from the object store so that checking the option loads no AWS SDK.
 */
import { OnelogError } from '../../protocol/errors.js';

/** Where an S3ObjectStore (object-store.ts) keeps its objects. */
export interface S3Location {
  bucket: string;
  /** Prefix of every key ('' or ending in '/'). */
  prefix: string;
  /** The server's URL; unset for AWS S3 itself. */
  endpoint?: string;
  /** @default 'us-east-1' */
  region: string;
}

/**
 * Reads `s3://BUCKET[/PREFIX]?endpoint=URL&region=R`.
 * @throws OnelogError `INVALID_CONFIG` naming what is wrong and the form expected
 */
export function parseS3Url(text: string): S3Location {
  const form = 's3://BUCKET[/PREFIX]?endpoint=URL[&region=REGION]';
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new OnelogError('INVALID_CONFIG', `--log takes ${form}, got ${JSON.stringify(text)}`, { option: 'log' });
  }
  if (url.protocol !== 's3:' || url.hostname === '') {
    throw new OnelogError('INVALID_CONFIG', `--log takes ${form} (a bucket name after s3://), got ${JSON.stringify(text)}`, { option: 'log' });
  }
  for (const name of url.searchParams.keys()) {
    if (name !== 'endpoint' && name !== 'region') {
      throw new OnelogError('INVALID_CONFIG', `--log: unknown parameter ${name}; ${form}`, { option: 'log' });
    }
  }
  const path = decodeURIComponent(url.pathname.replace(/^\/+/, ''));
  const endpoint = url.searchParams.get('endpoint') ?? undefined;
  if (endpoint !== undefined && !/^https?:\/\//.test(endpoint)) {
    throw new OnelogError('INVALID_CONFIG', `--log: endpoint must be an http:// or https:// URL, got ${JSON.stringify(endpoint)}`, { option: 'log' });
  }
  return {
    bucket: url.hostname, prefix: path === '' ? '' : path.endsWith('/') ? path : `${path}/`,
    ...(endpoint === undefined ? {} : { endpoint }), region: url.searchParams.get('region') ?? 'us-east-1',
  };
}
