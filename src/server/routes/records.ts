/**
 * The record browser's route (docs/http-api.md): `GET /topics/:topic/records`, a page of one partition's records from
 * an offset, a timestamp or the newest, optionally searched by key, as JSON records with each value's full size.
 */
import type { FastifyInstance } from 'fastify';
import type { OnelogApi } from '../../protocol/api.js';
import { OnelogError } from '../../protocol/errors.js';
import { jsonToBytes, parseTimestamp, recordToJson } from '../../protocol/json-records.js';
import type { BytesEncoding } from '../../protocol/json-records.js';
import { KEY_MATCHES } from '../../protocol/record-pages.js';
import type { JsonRecordPage, KeyMatch } from '../../protocol/record-pages.js';
import { encodingSchema } from './schemas.js';

/** The query's fields: text, as every query value (types are not coerced); the broker checks each number's range. */
interface RecordsQuery {
  partition: string;
  offset?: string;
  timestamp?: string;
  newest?: 'true' | 'false';
  limit?: string;
  key?: string;
  keyMatch?: KeyMatch;
  maxScanRecords?: string;
  maxValueBytes?: string;
  encoding?: BytesEncoding;
}

const digits = { type: 'string', pattern: '^[0-9]{1,16}$' } as const;

/** `GET /topics/:topic/records?partition=P&(offset=O|timestamp=T|newest=true)&limit=N&key=K&keyMatch=exact|prefix&maxScanRecords=N&maxValueBytes=N&encoding=utf8|base64`. */
export function registerRecordRoutes(app: FastifyInstance, api: OnelogApi): void {
  app.get<{ Params: { topic: string }; Querystring: RecordsQuery }>(
    '/topics/:topic/records',
    {
      schema: {
        querystring: {
          type: 'object', required: ['partition'], additionalProperties: false,
          properties: {
            partition: { type: 'string', pattern: '^[0-9]{1,9}$' }, offset: digits, timestamp: { type: 'string', maxLength: 64 },
            newest: { type: 'string', enum: ['true', 'false'] }, limit: digits, key: { type: 'string' },
            keyMatch: { type: 'string', enum: KEY_MATCHES }, maxScanRecords: digits, maxValueBytes: digits, encoding: encodingSchema,
          },
        },
      },
    },
    async (request): Promise<JsonRecordPage> => {
      const { partition, offset, timestamp, newest, limit, key, keyMatch, maxScanRecords, maxValueBytes, encoding = 'utf8' } = request.query;
      const number = (v: string | undefined) => (v === undefined ? undefined : Number(v));
      const page = await api.browseRecords({
        topic: request.params.topic, partition: Number(partition), offset: number(offset),
        timestamp: timestamp === undefined ? undefined : parseTimestamp(timestamp, 'timestamp', 'INVALID_REQUEST'),
        newest: newest === undefined ? undefined : newest === 'true', limit: number(limit), key: searchKey(key, encoding), keyMatch,
        maxScanRecords: number(maxScanRecords), maxValueBytes: number(maxValueBytes),
      });
      return { ...page, records: page.records.map((r) => ({ ...recordToJson(r, encoding), valueBytes: r.valueBytes, valueTruncated: r.valueTruncated })) };
    },
  );
}

/** The key searched for, in the request's encoding. @throws OnelogError `INVALID_REQUEST` for base64 that is not */
function searchKey(key: string | undefined, encoding: BytesEncoding): Buffer | undefined {
  if (key === undefined) return undefined;
  try {
    return jsonToBytes(key, encoding, 'key') ?? undefined;
  } catch (err) {
    throw new OnelogError('INVALID_REQUEST', (err as OnelogError).message, (err as OnelogError).context);
  }
}

