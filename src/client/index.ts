/**
 * The onelog client: `new Onelog({ url })` talks to `onelog serve` over HTTP; `new Onelog({ api: broker })`
 * runs the same producer, consumer and admin code on an embedded broker (`onelog/broker`). Importing this
 * module loads no storage engine and no native module.
 *
 * ```ts
 * const onelog = new Onelog({ url: 'http://127.0.0.1:7070' });
 * await onelog.producer().send({ topic: 'edits', messages: [{ key: 'k', value: 'v' }] });
 * const consumer = onelog.consumer({ groupId: 'g', startPolicy: 'earliest' });
 * consumer.subscribe({ topic: 'edits' });
 * await consumer.run({ eachMessage: async ({ message }) => { ... } });
 * ```
 */
import type { OnelogApi } from '../protocol/api.js';
import { Admin } from './admin.js';
import { Consumer } from '../member/consumer.js';
import type { ConsumerOptions } from '../member/consumer.js';
import { BinaryApi } from './binary-api.js';
import { defaultServerUrl, HttpApi } from './http-api.js';
import { OnelogError } from '../protocol/errors.js';
import { Producer } from './producer.js';
import { PushConsumer } from './push-consumer.js';
import { ShareConsumer } from './share-consumer.js';
import type { ShareConsumerOptions } from './share-consumer.js';
import type { PushConsumerOptions } from './push-consumer.js';
import type { ProducerOptions } from './producer.js';
import type { HttpApiOptions } from './http-api.js';

export { Admin } from './admin.js';
export { Consumer } from '../member/consumer.js';
export type { ConsumedMessage, ConsumerOptions, EachMessagePayload, RunOptions } from '../member/consumer.js';
export type { ExternalOffsetStore, ExternalPosition } from '../member/external-offsets.js';
export { HttpApi, defaultServerUrl } from './http-api.js';
export type { HttpApiOptions } from './http-api.js';
export { BinaryApi } from './binary-api.js';
export { Producer } from './producer.js';
export { PushConsumer } from './push-consumer.js';
export { ShareConsumer } from './share-consumer.js';
export type { SharedMessage, ShareConsumerOptions, ShareRunOptions } from './share-consumer.js';
export type { PushConsumerOptions } from './push-consumer.js';
export type { BytesLike, Message, ProducerOptions } from './producer.js';
export { MemoryDedupe, recordIdKey, recordKey } from './dedupe.js';
export type { Dedupe, MemoryDedupeOptions, OnceResult } from './dedupe.js';
export { OnelogError, ERRORS } from '../protocol/errors.js';
export type { ErrorCode } from '../protocol/errors.js';
// The types of the API's requests and answers, by noun: every type the classes above take or answer, and the body
// an alert sink receives.
export type { OnelogApi } from '../protocol/api.js';
export type {
  CleanupPolicy, CommitMode, DeliveryMode, GroupType, OutOfRangePolicy, RecordHeader, RecordInput, ShareOrdering, StartPolicy, StoredRecord,
} from '../protocol/types.js';
export type {
  AlterTopicRequest, CompactionResult, CompactionStats, CompactTopicRequest, CreateTopicRequest, DeleteRecordsRequest, DeleteRecordsResult,
  DeleteTopicResult, DescribeTopicOptions, RetentionResult, TopicDescription, TopicSummary,
} from '../protocol/topics.js';
export type { CompressionType, FlushPolicy, TopicConfig } from '../protocol/topic-config.js';
export type { PartitionError, PartitionState, TopicPartition } from '../protocol/partitions.js';
export type { ProduceRecord, ProduceRequest, ProduceResult, ProducerIdempotence, ProducerIdentity } from '../protocol/produce.js';
export type { FetchedPartition, FetchRequest, FetchResult } from '../protocol/fetch.js';
export type { ShareSettings, SubscribeRequest, SubscribeResult, SubscriptionInfo } from '../protocol/subscriptions.js';
export type { DeliveryInfo, RetryPolicy, RetryPolicyInput } from '../protocol/retry-policy.js';
export type {
  AssignedPartition, AssignorName, GroupDescription, GroupPartition, GroupState, GroupSummary, HeartbeatRequest, JoinGroupRequest,
  LeaveGroupRequest, MemberAssignment, MemberDescription,
} from '../protocol/groups.js';
export type {
  CheckpointDescription, CheckpointRequest, CommitRequest, OffsetResetRecord, ResetOffsetsRequest, ResetOffsetsResult, ResetSpec,
} from '../protocol/offsets.js';
export type { ShareAckRequest, ShareAckResult, SharedRecord, ShareFetchRequest, ShareFetchResult } from '../protocol/share-groups.js';
export type { NackBatchRequest, NackRequest, NackResult } from '../protocol/nacks.js';
export type {
  DeadLetter, DeadLetterAction, DeadLetterList, DeadLetterListRequest, PurgeRequest, PurgeResult, RedriveRequest, RedriveResult,
} from '../protocol/dead-letters.js';
export type {
  AcknowledgeAlertRequest, AlertListRequest, AlertNotification, AlertSink, GroupAlert, GroupAlertKind, GroupHistory, GroupLagTotals, HealthSample,
  HealthSettings, PartitionHealth, PartitionHealthState,
} from '../protocol/monitoring-api.js';
export type { AclBinding, AclOperation, AclResourceType, AuditEntry, CreatedUser, UserSummary } from '../protocol/security.js';

/**
 * Where the client connects: a server URL, or any {@link OnelogApi} such as an embedded Broker. With
 * `binary: true`, produce and fetch use the binary data path (RecordBatch v2 in WebSocket binary frames,
 * no JSON or base64 per record); everything else stays HTTP/JSON. `token`: a user's token; `tls`: the CA of an
 * `https://` server and a client certificate (docs/security.md); `requestTimeoutMs`: see {@link HttpApiOptions}.
 * @default binary false; token: env `ONELOG_TOKEN`, else none; tls: the files env `ONELOG_CA`, `ONELOG_CERT`, `ONELOG_KEY` name
 */
export type OnelogOptions = ({ url?: string; binary?: boolean } & HttpApiOptions) | { api: OnelogApi };

export class Onelog {
  /** The API every producer, consumer and admin of this client uses. */
  readonly api: OnelogApi;

  /** @param options `{ url }` (default env `ONELOG_URL`, else `http://127.0.0.1:7070`) or `{ api }` */
  constructor(options: OnelogOptions = {}) {
    if ('api' in options) this.api = options.api;
    else {
      const { url = defaultServerUrl(), binary, ...connection } = options;
      this.api = binary ? new BinaryApi(url, connection) : new HttpApi(url, connection);
    }
  }

  /** A producer; `{ idempotent: true }` stores each send once even when retried. */
  producer(options: ProducerOptions = {}): Producer {
    return new Producer(this.api, options);
  }

  /** A consumer group member; `Tx` is the transaction type of `options.offsetStore`, if any. */
  consumer<Tx = undefined>(options: ConsumerOptions<Tx>): Consumer<Tx> {
    return new Consumer<Tx>(this.api, options);
  }

  /**
   * A group member that receives records pushed over a WebSocket with credit-based flow control (needs
   * `{ url }`: push streams are served by `onelog serve`).
   * @throws OnelogError `INVALID_REQUEST` for a client built on an in-process `{ api }`
   */
  pushConsumer(options: PushConsumerOptions): PushConsumer {
    if (!(this.api instanceof HttpApi)) throw new OnelogError('INVALID_REQUEST', 'push consumers need a server: new Onelog({ url })');
    return new PushConsumer(this.api.url, options, this.api.connection);
  }

  /**
   * A share group's member (docs/consumer-groups.md): `run({ eachMessage })` accepts a record when the handler
   * resolves and releases it when it throws; `message.accept()`, `release({ delayMs })`, `reject(reason)` and
   * `renew()` say otherwise.
   */
  shareConsumer(options: ShareConsumerOptions): ShareConsumer {
    return new ShareConsumer(this.api, options);
  }

  admin(): Admin {
    return new Admin(this.api);
  }

  /**
   * Closes the connections this client keeps to a server (the binary data socket, a TLS agent), once its
   * producers and consumers are done; the process can then exit. Nothing to close on an in-process `{ api }`.
   */
  close(): void {
    if (this.api instanceof HttpApi) this.api.close();
  }
}
