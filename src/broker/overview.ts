/**
 * A broker's health at a glance (`GET /overview`, docs/monitoring.md "Console: overview"): every topic's size, every
 * group's worst partition state, lag and time lag with its active alerts, and the active alerts, in one bounded
 * answer. The groups' partitions are read as an evaluation reads them (the health reader, its unread ranges cached),
 * at most {@link MAX_OVERVIEW_GROUP_PARTITIONS} of them, letting the event loop turn between slices.
 */
import type { Logs } from '../log/logs.js';
import { LagTotals } from '../monitoring/group-lag-totals.js';
import type { Monitor } from '../monitoring/monitor.js';
import type { GroupSummary } from '../protocol/groups.js';
import type { GroupAlert, GroupAlertKind, PartitionHealthState, TopicRatePoint } from '../protocol/monitoring-api.js';
import { ALERT_SEVERITY, MAX_OVERVIEW_GROUP_PARTITIONS, STATE_URGENCY } from '../protocol/overview.js';
import type { Overview, OverviewGroup, OverviewRequest, OverviewTopic } from '../protocol/overview.js';
import type { TopicSummary } from '../protocol/topics.js';
import { checkInteger } from '../protocol/validate.js';

/** What an overview is read from. */
export interface OverviewSources {
  logs: Logs;
  monitor: Monitor;
  topics: () => Promise<TopicSummary[]>;
  /** Each topic's recent rates, by topic (a topic without traffic absent). */
  rates: () => Promise<ReadonlyMap<string, TopicRatePoint>>;
  groups: () => Promise<GroupSummary[]>;
  now: () => number;
}

/**
 * Reads the overview now.
 * @throws OnelogError `INVALID_REQUEST` for a limit outside 1 to 1,000; the stores' errors
 */
export async function readOverview(sources: OverviewSources, request: OverviewRequest = {}): Promise<Overview> {
  const limit = checkInteger(request.limit ?? 100, 'limit', 1, 1000);
  const topics = await topicSizes(sources.logs, await sources.topics(), await sources.rates());
  const groups = await groupHealth(sources.monitor, await sources.groups());
  const alerts = [...sources.monitor.alerts.active()].sort(bySeverity);
  return {
    at: sources.now(),
    topics: topics.sort((a, b) => b.sizeBytes - a.sizeBytes || b.records - a.records || a.topic.localeCompare(b.topic)).slice(0, limit),
    topicCount: topics.length,
    groups: groups.sort(worstFirst).slice(0, limit),
    groupCount: groups.length,
    alerts: alerts.slice(0, limit),
    activeAlertCount: alerts.length,
  };
}

/** A topic's rates without traffic. */
const NO_RATES: OverviewTopic['rates'] = { produceRecordsPerSec: 0, produceBytesPerSec: 0, consumeRecordsPerSec: 0, consumeBytesPerSec: 0 };

/** Each topic's bytes, records and recent rates (a topic deleted meanwhile is left out). */
async function topicSizes(logs: Logs, topics: readonly TopicSummary[], rates: ReadonlyMap<string, TopicRatePoint>): Promise<OverviewTopic[]> {
  const sizes: OverviewTopic[] = [];
  for (const { topic, partitions } of topics) {
    if (!logs.has(topic)) continue;
    let sizeBytes = 0;
    let records = 0;
    for (const p of await logs.offsets(topic)) {
      // A partition never appended to holds no bytes (and is not opened for it).
      sizeBytes += p.highWatermark === 0 ? 0 : logs.get(topic, p.partition).sizeBytes;
      records += p.highWatermark - p.logStartOffset;
    }
    const r = rates.get(topic) ?? NO_RATES;
    sizes.push({
      topic, partitions, sizeBytes, records,
      rates: { produceRecordsPerSec: r.produceRecordsPerSec, produceBytesPerSec: r.produceBytesPerSec, consumeRecordsPerSec: r.consumeRecordsPerSec, consumeBytesPerSec: r.consumeBytesPerSec },
    });
  }
  return sizes;
}

/** Each group's worst state, lag totals and active alerts; past the budget of partitions, its alerts only. */
async function groupHealth(monitor: Monitor, groups: readonly GroupSummary[]): Promise<OverviewGroup[]> {
  let budget = MAX_OVERVIEW_GROUP_PARTITIONS;
  const out: OverviewGroup[] = [];
  for (const g of groups) {
    const active = [...monitor.alerts.activeOf(g.groupId)];
    const worstAlert = active.map((a) => a.kind).sort(byKind)[0] ?? null;
    const row: OverviewGroup = {
      groupId: g.groupId, type: g.type, state: g.state, members: g.members, topics: g.topics, worstState: null, totalLag: null, maxTimeLagMs: null,
      activeAlerts: active.length, worstAlert, assessed: budget > 0,
    };
    if (budget > 0) {
      const totals = new LagTotals();
      let worst: PartitionHealthState = 'ok';
      for await (const slice of monitor.health.group(g.groupId)) {
        for (const p of slice) {
          const { health } = p.assessment;
          totals.add(p.sub.topic, p.offsets.partition, health);
          if (STATE_URGENCY.indexOf(health.state) < STATE_URGENCY.indexOf(worst)) worst = health.state;
        }
        budget -= slice.length;
        await new Promise<void>((resolve) => setImmediate(resolve)); // requests are served between slices
      }
      const { totalLag, maxTimeLag } = totals.value;
      Object.assign(row, { worstState: worst, totalLag, maxTimeLagMs: maxTimeLag?.timeLagMs ?? null });
    }
    out.push(row);
  }
  return out;
}

/** Position of an alert kind in {@link ALERT_SEVERITY}; null and unlisted kinds last. */
const severity = (kind: GroupAlertKind | null): number => {
  const i = kind === null ? -1 : ALERT_SEVERITY.indexOf(kind);
  return i < 0 ? ALERT_SEVERITY.length : i;
};
const byKind = (a: GroupAlertKind, b: GroupAlertKind): number => severity(a) - severity(b);
const bySeverity = (a: GroupAlert, b: GroupAlert): number => byKind(a.kind, b.kind) || b.createdAt - a.createdAt || b.id - a.id;
/** A state's position in {@link STATE_URGENCY}; not assessed last. */
const urgency = (state: PartitionHealthState | null): number => (state === null ? STATE_URGENCY.length : STATE_URGENCY.indexOf(state));

/** The most severe active alert first, then the most urgent state, then the longest time lag, then the largest lag, then by id. */
function worstFirst(a: OverviewGroup, b: OverviewGroup): number {
  return severity(a.worstAlert) - severity(b.worstAlert) || urgency(a.worstState) - urgency(b.worstState)
    || (b.maxTimeLagMs ?? -1) - (a.maxTimeLagMs ?? -1) || (b.totalLag ?? -1) - (a.totalLag ?? -1) || a.groupId.localeCompare(b.groupId);
}
