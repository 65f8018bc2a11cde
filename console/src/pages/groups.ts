/**
 * Groups: the list, and one group: its lag totals (total lag, the worst partitions by lag and by time lag), members
 * and their assignments (a share group's members, and each partition's records acquired and available), each
 * partition's lag, time lag and headroom (with charts of the last 24 hours and each partition's drain estimate,
 * console/src/history.ts), its alerts with acknowledgement, reset history, and links to its dead letters and its
 * replay (pages/dead-letters.ts, pages/replay.ts).
 */
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { api } from '../api.js';
import { Badge, Link, Page, Table, useData } from '../components.js';
import { bytes, duration, num, time } from '../format.js';
import { GroupHistoryCharts } from '../history.js';
import { AlertsTable } from './alerts.js';

export function GroupsPage(): VNode {
  const { data, error } = useData(api.groups, []);
  return html`<${Page} title="Consumer groups" error=${error} loading=${data === null}>
    <${Table} id="groups" head=${['group', 'state', 'members', 'topics']} empty="no groups yet"
      rows=${(data ?? []).map((g) => [
        html`<${Link} to=${`/groups/${encodeURIComponent(g.groupId)}`}>${g.groupId}<//>`, g.state, g.members, g.topics.join(', '),
      ])} />
  <//>`;
}

export function GroupPage({ groupId }: { groupId: string }): VNode {
  const { data, error, reload } = useData(() => api.group(groupId), [groupId]);
  return html`<${Page} title=${`Group ${groupId}`} error=${error} loading=${data === null}>
    ${data && html`<p>${data.shareMembers
      ? html`<b>share group</b> (queues on the log: every member reads every partition) · ${data.shareMembers.length} members heard from`
      : html`state <b>${data.state}</b> · generation ${data.generationId} · assignor ${data.assignor ?? '-'}`}</p>
    <p id="group-totals">lag <b>${num(data.totalLag)}</b> in all${data.maxLag ? html` · most <b>${num(data.maxLag.lag)}</b> at ${data.maxLag.topic}/${data.maxLag.partition}` : ''}${
      data.maxTimeLag ? html` · time lag at most <b>${duration(data.maxTimeLag.timeLagMs)}</b> at ${data.maxTimeLag.topic}/${data.maxTimeLag.partition}` : ''}</p>
    <h2>Partitions</h2>
    <${Table} id="group-partitions"
      head=${['topic', 'partition', data.shareMembers ? 'start offset' : 'committed', 'log start', 'high watermark', 'lag', 'unread', 'lost', 'time lag', 'headroom', 'state',
        data.shareMembers ? 'acquired / available' : 'member']}
      rows=${data.subscriptions.flatMap((s) => s.partitions.map((p) => [
        html`<${Link} to=${`/topics/${encodeURIComponent(s.topic)}`}>${s.topic}<//>`, p.partition, num(p.committedOffset), num(p.logStartOffset),
        num(p.highWatermark), html`<span data-lag=${`${s.topic}/${p.partition}`}>${num(p.lag)}</span>`,
        `${p.unreadRecordsEstimate ? '~' : ''}${num(p.unreadRecords)}`, num(p.lostRecords), duration(p.timeLagMs),
        [duration(p.headroomMs), p.headroomBytes === null ? '' : ` / ${bytes(p.headroomBytes)}`].join(''),
        html`<${Badge} state=${p.state} />`,
        p.share ? html`<span data-share=${`${s.topic}/${p.partition}`}>${num(p.share.acquired)} / ${num(p.share.available)}</span>` : p.memberId ?? '-',
      ]))} />
    <${GroupHistoryCharts} groupId=${groupId} />
    <h2>Members</h2>
    ${data.shareMembers
      ? html`<${Table} id="share-members" empty="no members heard from" head=${['member', 'last heard from']}
          rows=${data.shareMembers.map((m) => [m.memberId, time(m.lastSeenAt)])} />`
      : html`<${Table} id="members" empty="no live members" head=${['member', 'client', 'commit mode', 'generation', 'last heartbeat', 'assignment']}
          rows=${data.members.map((m) => [m.memberId, m.clientId, m.commitMode, m.generationId, time(m.lastHeartbeatAt),
            m.assignment.map((a) => `${a.topic}/${a.partition}`).join(', ') || '-'])} />`}
    <h2>Alerts</h2>
    <${AlertsTable} alerts=${data.alerts} onChange=${reload} />
    <h2>Offset resets</h2>
    <${Table} id="resets" empty="no resets" head=${['executed', 'by', 'topic', 'partition', 'old offset', 'new offset', 'spec']}
      rows=${data.resets.map((r) => [time(r.executedAt), r.requestedBy, r.topic, r.partition, num(r.oldOffset), num(r.newOffset), r.spec])} />
    <h2>Dead letters and replay</h2>
    <ul id="group-operations">
      ${data.subscriptions.filter((s) => s.deadLetter !== null).map((s) => html`<li><${Link}
        to=${`/groups/${encodeURIComponent(groupId)}/dead-letters/${encodeURIComponent(s.topic)}`}>dead letters of ${s.topic}<//> (${num(s.deadLetter!.depth)} waiting)</li>`)}
      <li><${Link} to=${`/groups/${encodeURIComponent(groupId)}/replay`}>replay: reset offsets with a preview, save a checkpoint<//></li>
    </ul>`}
  <//>`;
}
