/** What every Kafka API the listener serves is made of: its versions, message definitions and handler. */
import type { BinaryDataApi, OnelogApi } from '../../protocol/api.js';
import type { Struct } from '../codec/interpreter.js';
import type { RequestHeader } from '../codec/headers.js';
import type { MessageDefinition } from '../codec/schema.js';
import type { KafkaMembers } from '../kafka-members.js';
import type { KafkaShareMembers } from '../share-members.js';
import type { TopicIds } from '../topic-ids.js';
import type { Principal } from '../../security/principal.js';
import type { ScramExchange } from '../../security/scram.js';
import type { Users } from '../../security/users.js';

/** What the Kafka listener needs of the broker: its API, the binary data path, lookups by timestamp (the embedded broker). */
export interface KafkaDataApi extends OnelogApi, BinaryDataApi {
  /** The first offset whose record's timestamp is >= `timestamp`, or the high watermark. */
  offsetForTimestamp(topic: string, partition: number, timestamp: number): Promise<number>;
  /** A group's committed offsets (none for an unknown group). */
  committedOffsets(groupId: string): Promise<Array<{ topic: string; partition: number; offset: number; metadata: string }>>;
  /**
   * Resolves when the group id is valid: the broker has nothing more to check, but the principal's broker (the
   * authorized proxy) first checks `read` on the group, as Kafka authorizes share group requests before anything.
   */
  authorizeGroup(groupId: string): Promise<void>;
  /** A group's configs set over Kafka, by name (group-configs.ts). */
  groupConfigs(groupId: string): Promise<Record<string, string>>;
  /** Replaces a group's configs set over Kafka, creating the group if it does not exist. */
  setGroupConfigs(groupId: string, configs: Readonly<Record<string, string>>): Promise<void>;
}

/** What the listener needs to know of its broker's cluster (src/broker/broker.ts's Broker has it all; src/kafka/placement.ts uses it). */
export interface KafkaCluster {
  /** This broker's id in its cluster (its node id), or null on the embedded default (node 0). */
  readonly brokerId: number | null;
  /** The live brokers, with `host:port` of their Kafka listener (null without one); null on the embedded default. */
  liveBrokers(): Promise<ReadonlyArray<{ brokerId: number; kafkaAddress: string | null }> | null>;
  /** Each partition's sequencer now, by topic then partition (those nobody holds left out); null on the embedded default. */
  partitionLeaders(topics: readonly string[]): Promise<ReadonlyMap<string, ReadonlyMap<number, number>> | null>;
  /** The holder of the group's lease now; null when nobody holds it, and on the embedded default. */
  groupCoordinator(groupId: string): Promise<number | null>;
}

/** One client connection's SASL state (docs/security.md). */
export interface KafkaConnection {
  /** Who it authenticated as; null until SASL succeeded (or on a broker without users to check). */
  principal: Principal | null;
  /** The mechanism SaslHandshake chose. */
  mechanism: 'PLAIN' | 'SCRAM-SHA-256' | null;
  /** A SCRAM exchange under way. */
  scram: ScramExchange | null;
  /** After a SaslHandshake v0: the next frames are bare SASL tokens, not requests, until it authenticated. */
  bareTokens: boolean;
  /** Close the connection once this answer is written (a failed authentication). */
  closeAfterAnswer: boolean;
  /** The client's address (ShareGroupDescribe's client host). */
  readonly remoteAddress: string;
  /** The broker as the connection's principal uses it, made once per principal (not per request). */
  authorized: { principal: Principal; api: KafkaDataApi } | null;
}

/** What a handler knows of the request and the broker. */
export interface RequestContext {
  /** The broker, as the connection's principal may use it (ACLs applied; security/permissions.ts). */
  api: KafkaDataApi;
  connection: KafkaConnection;
  /** The users SASL authenticates against; none on a broker that checks no one. */
  users?: Users | undefined;
  header: RequestHeader;
  /** The listener's address as clients must reach it (this broker in Metadata and FindCoordinator). */
  advertised: { host: string; port: number };
  /** Topics a client names are created with this many partitions (KafkaListenerOptions.autoCreateTopics); null: never. */
  autoCreateTopics: { partitions: number } | null;
  /**
   * The broker's cluster, as the broker itself sees it, not through the principal's ACLs (placement.ts: brokers,
   * partition leaders, group coordinators; handlers ask it only about topics and groups they may describe).
   */
  cluster: KafkaCluster;
  /** The APIs and versions served (ApiVersions answers them). */
  apis: readonly KafkaApi[];
  /** The Kafka members of onelog's groups, over every connection. */
  members: KafkaMembers;
  /** The Kafka members of share groups and their share sessions, over every connection. */
  shareMembers: KafkaShareMembers;
  /** Topic ids, as Metadata told them. */
  topicIds: TopicIds;
}

export interface KafkaApi {
  key: number;
  name: string;
  minVersion: number;
  maxVersion: number;
  request: MessageDefinition;
  response: MessageDefinition;
  /**
   * Answers a decoded request (null: no answer is due, as for Produce with acks=0); errors a client can act on are
   * answered as error codes, not thrown.
   */
  handle(request: Struct, ctx: RequestContext): Promise<Struct | null>;
}

/** ListOffsets' timestamp for a partition's earliest offset; also what clients commit to reset a partition to it. */
export const EARLIEST = -2;
/** ListOffsets' timestamp for a partition's latest offset (the high watermark); also committed to reset to it. */
export const LATEST = -1;

/** The embedded default's node id: one broker, leader of every partition (cluster mode: each broker's id, placement.ts). */
export const NODE_ID = 0;
