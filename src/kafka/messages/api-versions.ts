/** ApiVersions (key 18): which APIs and versions the broker serves. */
import { field, structs } from '../codec/schema.js';
import type { MessageDefinition } from '../codec/schema.js';

export const apiVersionsRequest: MessageDefinition = {
  name: 'ApiVersionsRequest', versions: '0-3', flexible: '3+',
  fields: [
    field('clientSoftwareName', 'string', '3+'),
    field('clientSoftwareVersion', 'string', '3+'),
  ],
};

export const apiVersionsResponse: MessageDefinition = {
  name: 'ApiVersionsResponse', versions: '0-3', flexible: '3+',
  fields: [
    field('errorCode', 'int16', '0+'),
    structs('apiKeys', '0+', [field('apiKey', 'int16', '0+'), field('minVersion', 'int16', '0+'), field('maxVersion', 'int16', '0+')]),
    field('throttleTimeMs', 'int32', '1+'),
    structs('supportedFeatures', '3+', [field('name', 'string', '3+'), field('minVersion', 'int16', '3+'), field('maxVersion', 'int16', '3+')],
      { tag: 0, tagged: '3+' }),
    field('finalizedFeaturesEpoch', 'int64', '3+', { tag: 1, tagged: '3+', default: -1 }),
    structs('finalizedFeatures', '3+', [field('name', 'string', '3+'), field('maxVersionLevel', 'int16', '3+'), field('minVersionLevel', 'int16', '3+')],
      { tag: 2, tagged: '3+' }),
    field('zkMigrationReady', 'bool', '3+', { tag: 3, tagged: '3+' }),
  ],
};
