/**
 * Topics: the list, and one topic with its partitions, settings, produce and consume rates over the last 24 hours, and
 * every subscribed group side by side.
 */
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { api } from '../api.js';
import { Badge, Link, Page, Table, useData } from '../components.js';
import { bytes, duration, num } from '../format.js';
import { TopicRateCharts } from '../history.js';

export function TopicsPage(): VNode {
  const { data, error } = useData(api.topics, []);
  return html`<${Page} title="Topics" error=${error} loading=${data === null}>
    <${Table} id="topics" head=${['topic', 'partitions']} empty="no topics yet (onelog topics create NAME --partitions N)"
      rows=${(data ?? []).map((t) => [html`<${Link} to=${`/topics/${encodeURIComponent(t.topic)}`}>${t.topic}<//>`, t.partitions])} />
  <//>`;
}

export function TopicPage({ topic }: { topic: string }): VNode {
  const { data, error } = useData(() => api.topic(topic), [topic]);
  const c = data?.config;
  return html`<${Page} title=${`Topic ${topic}`} error=${error} loading=${data === null}>
    ${c && html`<p class="settings">
      cleanup.policy <b>${c.cleanupPolicy}</b> · retention <b>${c.retentionMs < 0 ? 'unlimited' : duration(c.retentionMs)}</b>
      ${c.retentionBytes >= 0 ? html` / <b>${bytes(c.retentionBytes)}</b>` : ''} · segments <b>${bytes(c.segmentBytes)}</b>
      ${c.cleanupPolicy.includes('compact') ? html` · compaction lag <b>${duration(c.minCompactionLagMs)}</b>` : ''}
    </p>`}
    <h2>Partitions</h2>
    <p><${Link} to=${`/topics/${encodeURIComponent(topic)}/records`}><span id="browse-records">Browse the records</span><//></p>
    <${Table} id="partitions" head=${['partition', 'log start offset', 'high watermark', 'records', 'size']}
      rows=${(data?.partitions ?? []).map((p) => [p.partition, num(p.logStartOffset), num(p.highWatermark), num(p.highWatermark - p.logStartOffset), bytes(p.sizeBytes ?? null)])} />
    <${TopicRateCharts} topic=${topic} />
    <h2>Groups</h2>
    <${Table} id="topic-groups" empty="no group subscribes to this topic"
      head=${['group', 'partition', 'committed', 'lag', 'lost', 'time lag', 'headroom', 'state']}
      rows=${(data?.groups ?? []).flatMap((g) => g.partitions.map((p) => [
        html`<${Link} to=${`/groups/${encodeURIComponent(g.groupId)}`}>${g.groupId}<//>`, p.partition, num(p.committedOffset), num(p.lag),
        num(p.lostRecords), duration(p.timeLagMs), duration(p.headroomMs), html`<${Badge} state=${p.state} />`,
      ]))} />
  <//>`;
}
