/** ApiVersions (18): the APIs served, each with its version range. */
import { apiVersionsRequest, apiVersionsResponse } from '../messages/api-versions.js';
import type { KafkaApi } from './api.js';

export const apiVersions: KafkaApi = {
  key: 18, name: 'ApiVersions', minVersion: 0, maxVersion: 3, request: apiVersionsRequest, response: apiVersionsResponse,
  async handle(_request, { apis }) {
    return { errorCode: 0, apiKeys: apis.map((a) => ({ apiKey: a.key, minVersion: a.minVersion, maxVersion: a.maxVersion })), throttleTimeMs: 0 };
  },
};
