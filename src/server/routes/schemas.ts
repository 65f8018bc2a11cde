/** JSON schemas the routes share (fastify validates bodies and queries with them before a route runs). */
import { BYTES_ENCODINGS } from '../../protocol/json-records.js';
import type { HistoryRange } from '../../protocol/monitoring-api.js';

export const encodingSchema = { type: 'string', enum: BYTES_ENCODINGS } as const;
export const nonNegInt = { type: 'integer', minimum: 0 } as const;
/** `[{ partition, offset, metadata? }]` */
export const partitionOffsets = {
  type: 'array',
  items: {
    type: 'object',
    required: ['partition', 'offset'],
    properties: { partition: nonNegInt, offset: nonNegInt, metadata: { type: 'string' } },
  },
} as const;

/** `?hours=N` of a history (`GET /groups/:groupId/history`, `GET /topics/:topic/history`): text, the broker checks its range. */
export const historyQuery = {
  type: 'object', additionalProperties: false, properties: { hours: { type: 'string', pattern: '^[0-9]{1,6}$' } },
} as const;

/** The range a history's query asks for. */
export function historyRange(query: { hours?: string }): HistoryRange {
  return query.hours === undefined ? {} : { hours: Number(query.hours) };
}
