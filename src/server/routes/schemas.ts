/** JSON schemas the routes share (fastify validates bodies and queries with them before a route runs). */
import { BYTES_ENCODINGS } from '../../protocol/json-records.js';

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
