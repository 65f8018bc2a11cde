/**
 * Checks of group requests' shapes and values, before the coordinator acts on them: each names what was
 * wrong and what is allowed (`INVALID_REQUEST`, `INVALID_OFFSET`). Topics' existence is the log manager's
 * to check. Pure: no I/O.
 */
import type { JoinGroupRequest } from '../protocol/groups.js';
import type { CommitRequest, ResetOffsetsRequest } from '../protocol/offsets.js';
import type { SubscribeRequest } from '../protocol/subscriptions.js';
import { OnelogError } from '../protocol/errors.js';
import { COMMIT_MODES, DELIVERY_MODES, GROUP_TYPES, OUT_OF_RANGE_POLICIES, SHARE_ORDERINGS, START_POLICIES } from '../protocol/types.js';
import { checkGroupId, checkInteger, checkOneOf } from '../protocol/validate.js';
import { ASSIGNOR_NAMES } from './assignor.js';

/** A join: group id, topics, session timeout (1,000 to 3,600,000 ms), assignor, commit mode, policies, client id. @throws OnelogError `INVALID_REQUEST` naming the field */
export function checkJoinRequest(request: JoinGroupRequest): void {
  checkGroupId(request.groupId);
  if (!Array.isArray(request.topics) || request.topics.length === 0) {
    throw new OnelogError('INVALID_REQUEST', 'topics must be a non-empty array of topic names', { groupId: request.groupId });
  }
  if (request.sessionTimeoutMs !== undefined) checkInteger(request.sessionTimeoutMs, 'sessionTimeoutMs', 1000, 3_600_000);
  if (request.rebalanceTimeoutMs !== undefined) checkInteger(request.rebalanceTimeoutMs, 'rebalanceTimeoutMs', 1000, 3_600_000);
  if (request.assignor !== undefined) checkOneOf(request.assignor, 'assignor', ASSIGNOR_NAMES);
  if (request.commitMode !== undefined) checkOneOf(request.commitMode, 'commitMode', COMMIT_MODES);
  if (request.startPolicy !== undefined) checkOneOf(request.startPolicy, 'startPolicy', START_POLICIES);
  if (request.onOutOfRange !== undefined) checkOneOf(request.onOutOfRange, 'onOutOfRange', OUT_OF_RANGE_POLICIES);
  if (request.commitStartPositions !== undefined && typeof request.commitStartPositions !== 'boolean') {
    throw new OnelogError('INVALID_REQUEST', 'commitStartPositions must be true or false', { groupId: request.groupId });
  }
  if (request.clientId !== undefined && (typeof request.clientId !== 'string' || request.clientId.length > 200)) {
    throw new OnelogError('INVALID_REQUEST', 'clientId must be a string of at most 200 characters', { groupId: request.groupId });
  }
}

/**
 * The push endpoint is the broker's to check (its outbound policy).
 * @throws OnelogError `INVALID_REQUEST` for a bad policy, delivery mode, maxInFlight (1 to 100), headroomWarnRatio
 *   (0 to 1, exclusive) or stallMs (1,000 ms to 30 days)
 */
export function checkSubscribeRequest(request: SubscribeRequest): void {
  checkGroupId(request.groupId);
  if (request.startPolicy !== undefined) checkOneOf(request.startPolicy, 'startPolicy', START_POLICIES);
  if (request.deliveryMode !== undefined) checkOneOf(request.deliveryMode, 'deliveryMode', DELIVERY_MODES);
  if (request.onOutOfRange !== undefined) checkOneOf(request.onOutOfRange, 'onOutOfRange', OUT_OF_RANGE_POLICIES);
  if (request.maxInFlight !== undefined) checkInteger(request.maxInFlight, 'maxInFlight', 1, 100);
  const ratio = request.headroomWarnRatio;
  if (ratio !== undefined && (typeof ratio !== 'number' || !(ratio > 0 && ratio < 1))) {
    throw new OnelogError('INVALID_REQUEST', `headroomWarnRatio must be a number between 0 and 1 (exclusive), got ${JSON.stringify(ratio)}`, {
      headroomWarnRatio: ratio,
    });
  }
  if (request.stallMs !== undefined) checkInteger(request.stallMs, 'stallMs', 1000, 30 * 24 * 3_600_000);
  if (request.type !== undefined) checkOneOf(request.type, 'type', GROUP_TYPES);
  if (request.lockMs !== undefined) checkInteger(request.lockMs, 'lockMs', 1000, 3_600_000);
  if (request.ordering !== undefined) checkOneOf(request.ordering, 'ordering', SHARE_ORDERINGS);
  if (request.maxInFlightRecords !== undefined) checkInteger(request.maxInFlightRecords, 'maxInFlightRecords', 1, 100_000);
  if (request.maxDeliveries !== undefined && request.maxDeliveries !== null) {
    checkInteger(request.maxDeliveries, 'maxDeliveries', 1, 100);
    if (request.retry) {
      throw new OnelogError('INVALID_REQUEST', 'maxDeliveries bounds the deliveries of a subscription without a retry policy; with one, ' +
        'retry.maxAttempts is the bound (deliveries that ended with their consumer dying count there too)', { maxDeliveries: request.maxDeliveries });
    }
  }
}

/** @throws OnelogError `INVALID_REQUEST` for a bad spec, `INVALID_OFFSET` for a negative target offset */
export function checkResetRequest(request: ResetOffsetsRequest): void {
  checkGroupId(request.groupId);
  const spec = request.spec;
  checkOneOf(spec?.to, 'spec.to', ['earliest', 'latest', 'offset', 'datetime', 'shift', 'checkpoint']);
  if (spec.to === 'checkpoint' && typeof spec.name !== 'string') throw new OnelogError('INVALID_REQUEST', 'spec.name must name a checkpoint');
  if (spec.to === 'offset') checkInteger(spec.offset, 'spec.offset', 0, Number.MAX_SAFE_INTEGER, 'INVALID_OFFSET');
  if (spec.to === 'datetime') checkInteger(spec.timestamp, 'spec.timestamp', Number.MIN_SAFE_INTEGER);
  if (spec.to === 'shift') checkInteger(spec.shiftBy, 'spec.shiftBy', Number.MIN_SAFE_INTEGER);
}

/**
 * A commit's shape (any transport: HTTP checks it by schema, the data path and embedded callers here): a topic
 * name, and offsets a list of `{ partition, offset, metadata? }` with integer partitions. The offsets' values
 * are the coordinator's to check (`INVALID_OFFSET`, `OFFSET_OUT_OF_RANGE`).
 * @throws OnelogError `INVALID_REQUEST` naming the field
 */
export function checkCommitRequest(request: CommitRequest): void {
  checkGroupId(request.groupId);
  if (typeof request.topic !== 'string') throw new OnelogError('INVALID_REQUEST', `a commit names its topic, got ${JSON.stringify(request.topic)}`);
  if (!Array.isArray(request.offsets) || !request.offsets.every((o) => o !== null && typeof o === 'object')) {
    throw new OnelogError('INVALID_REQUEST', 'a commit names its offsets: [{ partition, offset, metadata? }]', { topic: request.topic });
  }
  for (const o of request.offsets) {
    checkInteger(o.partition, 'partition', 0);
    if (o.metadata !== undefined && typeof o.metadata !== 'string') {
      throw new OnelogError('INVALID_REQUEST', `an offset's metadata is a string, got ${JSON.stringify(o.metadata)}`, { partition: o.partition });
    }
  }
  checkMember(request);
}

/**
 * A request from a group member names its generation too.
 * @throws OnelogError `INVALID_REQUEST`
 */
export function checkMember(request: { memberId?: string; generationId?: number }): void {
  if (request.memberId === undefined) return;
  if (typeof request.memberId !== 'string' || request.memberId.length === 0) {
    throw new OnelogError('INVALID_REQUEST', 'memberId must be the member id a join answered', { memberId: request.memberId });
  }
  const { generationId } = request;
  if (typeof generationId !== 'number' || !Number.isSafeInteger(generationId) || generationId < 0) {
    throw new OnelogError(
      'INVALID_REQUEST',
      `generationId must be the integer from the member's last join or heartbeat answer (sent with memberId), got ${JSON.stringify(generationId)}`,
      { memberId: request.memberId, generationId },
    );
  }
}

