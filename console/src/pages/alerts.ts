/** Alerts: every alert, most recent first, with an acknowledge button on those not yet acknowledged. */
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import type { GroupAlert } from '../api.js';
import { Badge, Link, Page, Table, useData } from '../components.js';
import { time } from '../format.js';

/** The alerts table; `onChange` reloads after an acknowledgement. */
export function AlertsTable({ alerts, onChange }: { alerts: GroupAlert[]; onChange: () => void }): VNode {
  const [error, setError] = useState<string | null>(null);
  const ack = (id: number) => api.ack(id).then(onChange, (e: Error) => setError(e.message));
  return html`${error && html`<p class="error" role="alert">${error}</p>`}
    <${Table} id="alerts" empty="no alerts"
      head=${['id', 'raised', 'kind', 'group', 'partition', 'message', 'resolved', 'acknowledged']}
      rows=${alerts.map((a) => [
        a.id, time(a.createdAt), html`<${Badge} state=${a.kind} />`,
        html`<${Link} to=${`/groups/${encodeURIComponent(a.groupId)}`}>${a.groupId}<//>`, `${a.topic}/${a.partition}`, a.message,
        a.resolvedAt === null ? html`<b>active</b>` : time(a.resolvedAt),
        a.acknowledgedAt === null
          ? html`<button data-ack=${a.id} onClick=${() => ack(a.id)}>acknowledge</button>`
          : html`<span class="acked" data-acked=${a.id}>by ${a.acknowledgedBy} ${time(a.acknowledgedAt)}</span>`,
      ])} />`;
}

export function AlertsPage(): VNode {
  const [active, setActive] = useState(false);
  const { data, error, reload } = useData(() => api.alerts(active), [active]);
  return html`<${Page} title="Alerts" error=${error} loading=${data === null}>
    <label><input type="checkbox" checked=${active} onChange=${() => setActive(!active)} /> active only</label>
    <${AlertsTable} alerts=${data ?? []} onChange=${reload} />
  <//>`;
}
