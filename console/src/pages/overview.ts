/**
 * The overview, the console's first page: the broker's (or cluster's) health at a glance. Brokers and their leases
 * (in cluster mode), topics by size with their produce and consume rates, groups worst first (the most severe active alert, then the most urgent
 * partition state, then time lag, then lag), and the active alerts; reloaded live as the broker changes.
 */
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { api } from '../api.js';
import type { ClusterDescription, Overview } from '../api.js';
import { Badge, Link, Page, Table, useData } from '../components.js';
import { bytes, duration, num, time } from '../format.js';
import { AlertsTable } from './alerts.js';

const topicLink = (topic: string) => html`<${Link} to=${`/topics/${encodeURIComponent(topic)}`}>${topic}<//>`;
const groupLink = (groupId: string) => html`<${Link} to=${`/groups/${encodeURIComponent(groupId)}`}>${groupId}<//>`;
/** "3 of 120 shown" when a list was cut. */
const shown = (count: number, total: number) => (count < total ? html` <span class="muted">(${count} of ${total} shown)</span>` : '');

/** The brokers, and in cluster mode the leases; a user without describe on the cluster is told so. */
function Brokers({ cluster, error }: { cluster: ClusterDescription | null; error: string | null }): VNode {
  if (error !== null) return html`<p class="muted" id="cluster-error">brokers not shown: ${error}</p>`;
  if (cluster === null) return html`<p class="muted">loading…</p>`;
  const embedded = cluster.mode === 'embedded';
  return html`<p id="cluster-mode">${embedded
    ? html`<b>embedded</b>: one broker on its data directory, leading every partition and coordinating every group`
    : html`<b>cluster</b> of ${cluster.brokers.length} brokers on PostgreSQL and object storage`}</p>
    <${Table} id="brokers" head=${['broker', 'URL', 'Kafka', 'heartbeat', 'partitions led', 'groups coordinated', '']}
      rows=${cluster.brokers.map((b) => [
        b.brokerId ?? '-', b.url ?? '-', b.kafkaAddress ?? '-', b.heartbeatAgeMs === null ? 'not live' : embedded ? '-' : `${duration(b.heartbeatAgeMs)} ago`,
        num(b.partitionsLed), num(b.groupsCoordinated), b.self ? html`<span class="muted">answered</span>` : '',
      ])} />
    ${embedded ? '' : html`<details id="leases-details">
      <summary>${num(cluster.leases.length + cluster.leasesOmitted)} leases held${shown(cluster.leases.length, cluster.leases.length + cluster.leasesOmitted)}</summary>
      <${Table} id="leases" empty="no lease held" head=${['kind', 'of', 'holder', 'epoch', 'expires']}
        rows=${cluster.leases.map((l) => [l.kind, l.kind === 'group' ? groupLink(l.name) : l.name, l.holderBrokerId, l.epoch, time(l.expiresAt)])} />
    </details>`}`;
}

/** Records/s and bytes/s: `1,204 /s · 117.6 KiB/s`. */
const rate = (records: number, bytesPerSec: number) => `${num(Math.round(records))} /s · ${bytes(Math.round(bytesPerSec))}/s`;

/** The topics, largest first, with their produce and consume rates over the last 5 minutes. */
function Topics({ data }: { data: Overview }): VNode {
  return html`<h2>Topics by size${shown(data.topics.length, data.topicCount)}</h2>
    <${Table} id="overview-topics" empty="no topics yet (onelog topics create NAME --partitions N)"
      head=${['topic', 'partitions', 'records', 'size', 'produce (5 min)', 'consume (5 min)']}
      rows=${data.topics.map((t) => [topicLink(t.topic), t.partitions, html`<span data-records=${t.topic}>${num(t.records)}</span>`, bytes(t.sizeBytes),
        html`<span data-produce-rate=${t.topic}>${rate(t.rates.produceRecordsPerSec, t.rates.produceBytesPerSec)}</span>`,
        rate(t.rates.consumeRecordsPerSec, t.rates.consumeBytesPerSec)])} />`;
}

/** The groups, worst first. */
function Groups({ data }: { data: Overview }): VNode {
  return html`<h2>Groups, worst first${shown(data.groups.length, data.groupCount)}</h2>
    <${Table} id="overview-groups" empty="no groups yet" head=${['group', 'state', 'worst partition', 'lag', 'time lag', 'active alerts', 'members', 'topics']}
      rows=${data.groups.map((g) => [
        groupLink(g.groupId), g.state, g.worstState === null ? html`<span class="muted">not assessed</span>` : html`<${Badge} state=${g.worstState} />`,
        html`<span data-group-lag=${g.groupId}>${num(g.totalLag)}</span>`, duration(g.maxTimeLagMs),
        g.worstAlert === null ? '0' : html`${g.activeAlerts} <${Badge} state=${g.worstAlert} />`, g.members, g.topics.join(', '),
      ])} />`;
}

export function OverviewPage(): VNode {
  const { data, error, reload } = useData(api.overview, []);
  // The cluster changes with no event of its own (heartbeats, leases): it reloads with the rest.
  const cluster = useData(api.cluster, []);
  return html`<${Page} title="Overview" error=${error} loading=${data === null}>
    ${data && html`<p id="overview-counts">
      ${num(data.topicCount)} topics · ${num(data.groupCount)} groups · <b>${num(data.activeAlertCount)}</b> active alerts <span class="muted">(read ${time(data.at)})</span>
    </p>
    <h2>Brokers</h2>
    <${Brokers} cluster=${cluster.data} error=${cluster.error} />
    <${Topics} data=${data} />
    <${Groups} data=${data} />
    <h2>Active alerts${shown(data.alerts.length, data.activeAlertCount)}</h2>
    <${AlertsTable} alerts=${data.alerts} onChange=${reload} />`}
  <//>`;
}
