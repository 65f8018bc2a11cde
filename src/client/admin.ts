/**
 * The admin client: topics, groups and offset resets. A thin, typed layer over {@link OnelogApi}.
 */
import type { OnelogApi } from '../protocol/api.js';
import type { GroupDescription, GroupSummary } from '../protocol/groups.js';
import type { CheckpointDescription, CheckpointRequest, ResetOffsetsRequest, ResetOffsetsResult } from '../protocol/offsets.js';
import type {
  AlterTopicRequest, CompactionResult, CompactTopicRequest, CreateTopicRequest, DeleteRecordsRequest, DeleteRecordsResult, DeleteTopicResult,
  RetentionResult, TopicDescription, TopicSummary,
} from '../protocol/topics.js';

export class Admin {
  constructor(private readonly api: OnelogApi) {}

  /** @throws OnelogError `TOPIC_ALREADY_EXISTS`, `INVALID_TOPIC`, `INVALID_PARTITIONS`, `INVALID_CONFIG` */
  createTopic(request: CreateTopicRequest): Promise<TopicDescription> {
    return this.api.createTopic(request);
  }

  listTopics(): Promise<TopicSummary[]> {
    return this.api.listTopics();
  }

  /** Per partition: log start offset and high watermark. @throws OnelogError `UNKNOWN_TOPIC` */
  describeTopic(topic: string): Promise<TopicDescription> {
    return this.api.describeTopic(topic);
  }

  /** Changes topic settings; the others keep their values. @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_CONFIG` */
  alterTopic(request: AlterTopicRequest): Promise<TopicDescription> {
    return this.api.alterTopic(request);
  }

  /** Moves a partition's log start offset forward (Kafka's DeleteRecords). */
  deleteRecords(request: DeleteRecordsRequest): Promise<DeleteRecordsResult> {
    return this.api.deleteRecords(request);
  }

  /**
   * Deletes a topic: its records, every group's subscription to it and committed offsets of it (Kafka's DeleteTopics).
   * @throws OnelogError `UNKNOWN_TOPIC`, `TOPIC_IN_USE` if a subscription's retry policy uses it
   */
  deleteTopic(topic: string): Promise<DeleteTopicResult> {
    return this.api.deleteTopic(topic);
  }

  /** Applies the topic's retention now. @throws OnelogError `UNKNOWN_TOPIC` */
  enforceRetention(topic: string): Promise<RetentionResult> {
    return this.api.enforceRetention(topic);
  }

  /** Compacts a compacted topic now; `wait: false` only starts it. @throws OnelogError `UNKNOWN_TOPIC`, `INVALID_CONFIG` */
  compactTopic(request: CompactTopicRequest): Promise<CompactionResult> {
    return this.api.compactTopic(request);
  }

  listGroups(): Promise<GroupSummary[]> {
    return this.api.listGroups();
  }

  /** Per partition: committed offset, log start offset, high watermark, lag. @throws OnelogError `UNKNOWN_GROUP` */
  describeGroup(groupId: string): Promise<GroupDescription> {
    return this.api.describeGroup(groupId);
  }

  /**
   * Plans a reset (dry run) or, with `execute: true`, applies it; with live members it resolves once the
   * coordinator applied it at a safe point. @throws OnelogError `UNKNOWN_TOPIC`, `UNKNOWN_CHECKPOINT`
   */
  resetOffsets(request: ResetOffsetsRequest): Promise<ResetOffsetsResult> {
    return this.api.resetOffsets(request);
  }

  /** Deletes a group with no live members. @throws OnelogError `UNKNOWN_GROUP`, `NON_EMPTY_GROUP` */
  deleteGroup(groupId: string): Promise<void> {
    return this.api.deleteGroup(groupId);
  }

  /** Saves the group's committed offsets under a name. @throws OnelogError `UNKNOWN_GROUP` */
  saveCheckpoint(request: CheckpointRequest): Promise<CheckpointDescription> {
    return this.api.saveCheckpoint(request);
  }
}
