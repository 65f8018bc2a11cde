/**
 * `onelog groups ...`: create and alter subscriptions (delivery mode, policies, retry policy), list, describe
 * and delete consumer groups.
 */
import type { Command } from 'commander';
import type { GroupDescription } from '../protocol/groups.js';
import type { RetryPolicyInput } from '../protocol/retry-policy.js';
import type { SubscribeRequest, SubscribeResult, SubscriptionInfo } from '../protocol/subscriptions.js';
import { OnelogError } from '../protocol/errors.js';
import { formatDuration, parseRetryTiers } from '../protocol/retry-policy.js';
import { DELIVERY_MODES, GROUP_TYPES, OUT_OF_RANGE_POLICIES, SHARE_ORDERINGS, START_POLICIES } from '../protocol/types.js';
import type { DeliveryMode, GroupType, OutOfRangePolicy, ShareOrdering, StartPolicy } from '../protocol/types.js';
import { alertLine } from './alerts.js';
import { action, apiFor, describeGroupIfAny, parseInteger, printTable } from './common.js';
import { duration, printHealthTable } from './health-table.js';

interface SubscriptionOptions {
  topic: string;
  delivery?: string;
  start?: string;
  onOutOfRange?: string;
  pushEndpoint?: string;
  maxInFlight?: number;
  type?: string;
  lockMs?: number;
  ordering?: string;
  retry?: string;
  maxAttempts?: number;
  /** An integer, or `none` (checked as parsed). */
  maxDeliveries?: string;
  deadLetterTopic?: string;
  deadLetterAlertDepth?: number;
  webhookMaxAttempts?: number;
  headroomWarnRatio?: number;
  stallMs?: number;
  json?: boolean;
}

/** A ratio flag: a number between 0 and 1, exclusive. @throws OnelogError `INVALID_REQUEST` naming the flag */
function parseRatio(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !(n > 0 && n < 1)) throw new OnelogError('INVALID_REQUEST', `${flag} must be a number between 0 and 1 (exclusive), got ${JSON.stringify(value)}`);
    return n;
  };
}

/** Checks a flag's value against the allowed ones. @throws OnelogError `INVALID_REQUEST` */
function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!allowed.includes(value as T)) {
    throw new OnelogError('INVALID_REQUEST', `${flag} must be ${allowed.join(' | ')}, got ${JSON.stringify(value)}`);
  }
  return value as T;
}

/**
 * The retry policy the flags set, merged into the current one (`--max-attempts` alone changes only that);
 * undefined when no retry flag is given, null for `--retry none`.
 * @throws OnelogError `INVALID_REQUEST` for a bad spec, or `--max-attempts` / `--dead-letter-topic` without a policy
 */
function retryRequest(o: SubscriptionOptions, current: SubscriptionInfo | undefined): RetryPolicyInput | null | undefined {
  if (o.retry === undefined && o.maxAttempts === undefined && o.deadLetterTopic === undefined) return undefined;
  const tiers = o.retry === undefined ? current?.retry?.delaysMs : parseRetryTiers(o.retry);
  if (tiers === null) {
    if (o.maxAttempts !== undefined || o.deadLetterTopic !== undefined) {
      throw new OnelogError('INVALID_REQUEST', '--retry none removes the policy: drop --max-attempts and --dead-letter-topic');
    }
    return null;
  }
  if (tiers === undefined) {
    throw new OnelogError('INVALID_REQUEST', `group has no retry policy for ${o.topic} yet: give its delays with --retry (e.g. --retry 1s,30s,5m)`);
  }
  const maxAttempts = o.maxAttempts ?? current?.retry?.maxAttempts;
  const deadLetterTopic = o.deadLetterTopic ?? current?.retry?.deadLetterTopic;
  return { delaysMs: tiers, ...(maxAttempts !== undefined ? { maxAttempts } : {}), ...(deadLetterTopic !== undefined ? { deadLetterTopic } : {}) };
}

/** The subscription request the flags describe (only what they set). */
function subscriptionRequest(groupId: string, o: SubscriptionOptions, current?: SubscriptionInfo): SubscribeRequest {
  const retry = retryRequest(o, current);
  const deliveryMode = oneOf<DeliveryMode>('--delivery', o.delivery, DELIVERY_MODES);
  const startPolicy = oneOf<StartPolicy>('--start', o.start, START_POLICIES);
  const onOutOfRange = oneOf<OutOfRangePolicy>('--on-out-of-range', o.onOutOfRange, OUT_OF_RANGE_POLICIES);
  const type = oneOf<GroupType>('--type', o.type, GROUP_TYPES);
  const ordering = oneOf<ShareOrdering>('--ordering', o.ordering, SHARE_ORDERINGS);
  // --max-in-flight: a share group's records in flight per partition; a webhook's requests in flight per partition.
  const share = (type ?? current?.type) === 'share';
  return {
    groupId, topic: o.topic,
    ...(deliveryMode ? { deliveryMode } : {}),
    ...(startPolicy ? { startPolicy } : {}),
    ...(onOutOfRange ? { onOutOfRange } : {}),
    ...(o.pushEndpoint !== undefined ? { pushEndpoint: o.pushEndpoint === '' ? null : o.pushEndpoint } : {}),
    ...(o.maxInFlight !== undefined ? (share ? { maxInFlightRecords: o.maxInFlight } : { maxInFlight: o.maxInFlight }) : {}),
    ...(type ? { type } : {}),
    ...(o.lockMs !== undefined ? { lockMs: o.lockMs } : {}),
    ...(ordering ? { ordering } : {}),
    ...(retry !== undefined ? { retry } : {}),
    ...(o.maxDeliveries !== undefined ? { maxDeliveries: o.maxDeliveries === 'none' ? null : Number(o.maxDeliveries) } : {}),
    ...(o.deadLetterAlertDepth !== undefined ? { deadLetterAlertDepth: o.deadLetterAlertDepth } : {}),
    ...(o.webhookMaxAttempts !== undefined ? { webhookMaxAttempts: o.webhookMaxAttempts } : {}),
    ...(o.headroomWarnRatio !== undefined ? { headroomWarnRatio: o.headroomWarnRatio } : {}),
    ...(o.stallMs !== undefined ? { stallMs: o.stallMs } : {}),
  };
}

/** Adds the subscription flags `groups create` and `groups alter` share. */
function subscriptionFlags(command: Command): Command {
  return command
    .requiredOption('--topic <topic>', 'topic the group subscribes to')
    .option('--start <policy>', 'where a new group starts: earliest | latest')
    .option('--on-out-of-range <policy>', 'committed offset below the log start: pause (default) | earliest | latest')
    .option('--push-endpoint <url>', 'push: the http(s) URL the broker POSTs batches to (a webhook); "" to clear (WebSocket push)')
    .option('--max-in-flight <n>', 'webhook: most requests in flight per partition (1 to 100, default 1); share group: most records in flight ' +
      'per partition (1 to 100000, default 2000)', parseInteger('--max-in-flight', 1, 100_000))
    .option('--type <type>', 'consumer (default): each partition read by one member; share: members read the same partitions side by side, ' +
      'each record acquired under a lock (set at creation, never changed)')
    .option('--lock-ms <ms>', 'share group: how long a member holds an acquired record (1000 to 3600000, default 30000)', parseInteger('--lock-ms', 1000, 3_600_000))
    .option('--ordering <ordering>', 'share group: none (default) | key (each key\'s records one at a time, in order)')
    .option('--retry <delays>', 'retry policy: delay tiers such as 1s,30s,5m (units ms, s, m, h), or none to remove it')
    .option('--max-attempts <n>', 'deliveries before a record is dead-lettered, the first included (1 to 100; default: tiers + 1)',
      parseInteger('--max-attempts', 1, 100))
    .option('--max-deliveries <n>', 'without --retry: deliveries of a record before it is dead-lettered to <topic>.<group>.dlq, counting those that ' +
      'ended with the consumer dying (1 to 100), or none to remove the bound; a share group\'s delivery limit (default 5)', (v: string) => (v === 'none' ? v : String(parseInteger('--max-deliveries', 1, 100)(v))))
    .option('--dead-letter-topic <name>', 'where records go after --max-attempts (default <topic>.<group>.dlq; one partition)')
    .option('--dead-letter-alert-depth <n>', 'dead letters waiting that raise a dead-letter-depth alert (default 1)', parseInteger('--dead-letter-alert-depth', 1))
    .option('--webhook-max-attempts <n>', 'webhook with a retry policy: POSTs of a batch before its records are nacked (1 to 100, default 5)',
      parseInteger('--webhook-max-attempts', 1, 100))
    .option('--headroom-warn-ratio <ratio>', 'state at-risk (and a retention-headroom alert) below this fraction of retention left (0 to 1, default 0.25)',
      parseRatio('--headroom-warn-ratio'))
    .option('--stall-ms <ms>', 'state stalled (and a consumer-stalled alert) when unread records wait this long with no commit (default 300000)',
      parseInteger('--stall-ms', 1000, 30 * 24 * 3_600_000))
    .option('--json', 'print JSON');
}

function printSubscription(result: SubscribeResult, json?: boolean): void {
  if (json) {
    console.log(JSON.stringify(result));
    return;
  }
  const s = result.subscription;
  const maxInFlight = s.share ? s.share.maxInFlightRecords : s.maxInFlight;
  printTable(['GROUP', 'TOPIC', 'DELIVERY', 'START', 'ON-OUT-OF-RANGE', 'PUSH-ENDPOINT', 'MAX-IN-FLIGHT', 'RETRY', 'TYPE'],
    [[s.groupId, s.topic, s.deliveryMode, s.startPolicy, s.onOutOfRange, s.pushEndpoint, maxInFlight, retryText(s), shareText(s)]]);
}

/** A group's type in one line: `consumer`, or `share, lock 30s, ordering key`. */
function shareText(s: SubscriptionInfo): string {
  return s.share ? `share, lock ${formatDuration(s.share.lockMs)}, ordering ${s.share.ordering}` : s.type;
}

/** A retry policy in one line: `1s,30s x4 -> orders.g.dlq`, `x3 -> orders.g.dlq` (max deliveries, no tiers), or `-`. */
function retryText(s: SubscriptionInfo): string {
  if (!s.retry) return s.maxDeliveries !== null ? `x${s.maxDeliveries} -> ${s.deadLetterTopic}` : '-';
  return `${s.retry.delaysMs.map(formatDuration).join(',')} x${s.retry.maxAttempts} -> ${s.retry.deadLetterTopic}`;
}

export function registerGroups(program: Command): void {
  const groups = program.command('groups').description('create, alter, list, inspect and delete consumer groups');

  subscriptionFlags(groups
    .command('create <group>')
    .description('subscribe a new group to a topic, with its delivery mode (push or pull), start policy and retry policy')
    .option('--delivery <mode>', 'push | pull (default pull)'))
    .action(action(async (groupId: string, o: SubscriptionOptions, cmd: Command) => {
      const api = apiFor(cmd);
      const request = subscriptionRequest(groupId, o);
      const existing = await describeGroupIfAny(api, groupId);
      if (existing?.subscriptions.some((s) => s.topic === o.topic)) {
        throw new OnelogError('INVALID_REQUEST', `group ${groupId} already subscribes to ${o.topic}; change it with 'onelog groups alter ${groupId} --topic ${o.topic} ...'`, {
          groupId, topic: o.topic,
        });
      }
      printSubscription(await api.subscribe(request), o.json);
    }));

  subscriptionFlags(groups
    .command('alter <group>')
    .description('change a group\'s subscription to a topic: delivery mode, start policy, out-of-range policy, push endpoint')
    .option('--delivery <mode>', 'push | pull'))
    .action(action(async (groupId: string, o: SubscriptionOptions, cmd: Command) => {
      const api = apiFor(cmd);
      const group = await api.describeGroup(groupId);
      const current = group.subscriptions.find((s) => s.topic === o.topic);
      if (!current) {
        throw new OnelogError('INVALID_REQUEST', `group ${groupId} does not subscribe to ${o.topic}; create it with 'onelog groups create ${groupId} --topic ${o.topic} --delivery pull|push'`, {
          groupId, topic: o.topic,
        });
      }
      printSubscription(await api.subscribe(subscriptionRequest(groupId, o, current)), o.json);
    }));

  groups
    .command('list')
    .description('list consumer groups with their state, members and topics')
    .option('--json', 'print JSON')
    .action(action(async (opts: { json?: boolean }, cmd: Command) => {
      const list = await apiFor(cmd).listGroups();
      if (opts.json) console.log(JSON.stringify(list));
      else printTable(['GROUP', 'STATE', 'MEMBERS', 'TOPICS'], list.map((g) => [g.groupId, g.state, g.members, g.topics.join(',')]));
    }));

  groups
    .command('describe <group>')
    .description('state and members; per partition: committed offset, log start offset, high watermark, lag, member, pause')
    .option('--json', 'print JSON')
    .action(action(async (groupId: string, opts: { json?: boolean }, cmd: Command) => {
      const d = await apiFor(cmd).describeGroup(groupId);
      if (opts.json) console.log(JSON.stringify(d));
      else printDescription(d);
    }));

  groups
    .command('delete <group>')
    .description('delete a group with no live members: its committed offsets, subscriptions, pauses, checkpoints, history, and the records of its retry tiers and dead-letter topics')
    .action(action(async (groupId: string, _opts: unknown, cmd: Command) => {
      await apiFor(cmd).deleteGroup(groupId);
      console.log(`deleted group ${groupId}`);
    }));
}

function printDescription(d: GroupDescription): void {
  if (d.shareMembers) console.log(`share group ${d.groupId}: ${d.shareMembers.length} members`);
  else console.log(`group ${d.groupId}: state ${d.state}, generation ${d.generationId}, assignor ${d.assignor ?? '-'}, ${d.members.length} members`);
  // The group's totals lead, right under its name; then who coordinates it.
  console.log(`lag ${d.totalLag} in all${d.maxLag ? `, most ${d.maxLag.lag} at ${d.maxLag.topic}/${d.maxLag.partition}` : ''}` +
    `${d.maxTimeLag ? `, time lag at most ${duration(d.maxTimeLag.timeLagMs)} at ${d.maxTimeLag.topic}/${d.maxTimeLag.partition}` : ''}`);
  if (d.coordinator !== undefined) {
    console.log(d.coordinator === null ? 'coordinator: none (the next broker to serve one of its requests takes its lease)'
      : `coordinator: ${d.coordinator.brokerId === null ? 'this broker' : `broker ${d.coordinator.brokerId}`} ${d.coordinator.url ?? '(not live)'}`);
  }
  if (d.members.length > 0) {
    console.log();
    printTable(['MEMBER', 'CLIENT', 'COMMIT-MODE', 'GENERATION', 'PARTITIONS'], d.members.map((m) => [
      m.memberId, m.clientId, m.commitMode, m.generationId, m.assignment.map((a) => `${a.topic}/${a.partition}`).join(',') || '-',
    ]));
  }
  if (d.shareMembers && d.shareMembers.length > 0) {
    console.log();
    printTable(['MEMBER', 'LAST-SEEN'], d.shareMembers.map((m) => [m.memberId, new Date(m.lastSeenAt).toISOString()]));
  }
  for (const s of d.subscriptions) {
    console.log(`\n${s.topic}: ${s.share ? `${shareText(s)}, ` : ''}${s.pushEndpoint ? `push ${s.pushEndpoint}` : s.deliveryMode}, start ${s.startPolicy}, ` +
      `on out of range ${s.onOutOfRange}, at-risk below ${s.headroomWarnRatio} of retention, stalled after ${duration(s.stallMs)}`);
    if (s.share) {
      printTable(['PARTITION', 'START-OFFSET', 'ACQUIRED', 'AVAILABLE', 'OLDEST-AGE'], s.partitions.map((p) => [
        p.partition, p.committedOffset, p.share?.acquired ?? 0, p.share?.available ?? 0, p.timeLagMs === null ? '-' : duration(p.timeLagMs),
      ]));
    }
  }
  console.log();
  printHealthTable(['TOPIC'], d.subscriptions.flatMap((s) => s.partitions.map((partition) => ({ lead: [s.topic], partition }))));
  for (const s of d.subscriptions) {
    for (const p of s.partitions) if (p.paused) console.log(`\n${s.topic}/${p.partition} is paused: ${p.paused.message}`);
  }
  for (const s of d.subscriptions) {
    if (!s.retry && s.retryTiers.length === 0 && s.maxDeliveries === null) continue;
    const deadLetters = s.deadLetter ? `, dead letters ${s.deadLetter.depth} (alert at ${s.deadLetterAlertDepth})` : '';
    console.log(`\n${s.topic}: ${s.retry || s.retryTiers.length > 0 ? 'retry' : 'max deliveries'} ${retryText(s)}${deadLetters}`);
    if (s.retryTiers.length > 0) printTable(['RETRY-TIER', 'DELAY', 'BACKLOG'], s.retryTiers.map((t) => [t.topic, formatDuration(t.delayMs), t.backlog]));
  }
  if (d.alerts.length > 0) {
    console.log('\nalerts (most recent first):');
    for (const a of d.alerts) console.log(`  ${alertLine(a)}`);
  }
  if (d.resets.length > 0) {
    console.log('\noffset resets (most recent first):');
    printTable(['EXECUTED-AT', 'BY', 'TOPIC', 'PARTITION', 'OLD-OFFSET', 'NEW-OFFSET', 'SPEC'], d.resets.map((r) => [
      new Date(r.executedAt).toISOString(), r.requestedBy, r.topic, r.partition, r.oldOffset, r.newOffset, r.spec,
    ]));
  }
  if (d.deadLetterActions.length > 0) {
    console.log('\ndead-letter redrives and purges (most recent first):');
    printTable(['EXECUTED-AT', 'BY', 'TOPIC', 'ACTION', 'DEAD-LETTER-OFFSETS', 'RECORDS'], d.deadLetterActions.map((a) => [
      new Date(a.executedAt).toISOString(), a.requestedBy, a.topic, a.action, `${a.firstOffset}-${a.endOffset - 1}`, a.records,
    ]));
  }
  if (d.checkpoints.length > 0) {
    console.log('\ncheckpoints:');
    for (const c of d.checkpoints) console.log(`  ${c.name}  saved ${new Date(c.createdAt).toISOString()}  topics ${c.topics.join(',')}`);
  }
}
