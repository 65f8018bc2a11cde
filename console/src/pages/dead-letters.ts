/**
 * A group's dead letters of one topic (`#/groups/G/dead-letters/T`; docs/retries.md): the depth and the
 * dead-letter-depth alert (its threshold and state), each waiting dead letter with its original position, attempts,
 * first and last failure, reason, key and value preview; redrive one, a selection or all, and purge below an offset,
 * each first as a dry run showing exactly what would move, then executed (the broker audits it with the signed-in
 * user); and the redrives and purges executed so far. The buttons are those the user may use (`GET /access`).
 */
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { useState } from 'preact/hooks';
import { api, operatorApi } from '../api.js';
import type { DeadLetter, GroupDescription, PurgeResult, RedriveResult, RedriveSelection } from '../api.js';
import { Badge, Link, Page, Table, useData } from '../components.js';
import { num, time } from '../format.js';

/** Dead letters listed, the oldest first (`onelog dlq list --limit` shows more). */
const LISTED = 500;

/** A dry run waiting to be executed or cancelled. */
type Plan =
  | { kind: 'redrive'; selection: RedriveSelection; result: RedriveResult }
  | { kind: 'purge'; beforeOffset: number; result: PurgeResult; records: DeadLetter[] };

const position = (o: DeadLetter['original']) => `${o.topic}/${o.partition}@${o.offset}`;

/** The page of `groupId`'s dead letters of `topic`, refreshed every few seconds. */
export function DeadLettersPage({ groupId, topic }: { groupId: string; topic: string }): VNode {
  const list = useData(() => operatorApi.deadLetters(groupId, topic, LISTED), [groupId, topic]);
  const group = useData(() => api.group(groupId), [groupId]);
  const rights = useData(() => operatorApi.access(groupId, topic), [groupId, topic]).data?.actions;
  const [selected, setSelected] = useState<ReadonlySet<number>>(new Set());
  const [before, setBefore] = useState('');
  const [plan, setPlan] = useState<Plan | null>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [actionError, setActionError] = useState<string | null>(null);

  const records = list.data?.records ?? [];
  const chosen = records.filter((r) => selected.has(r.offset)).map((r) => r.offset);
  const failed = (e: Error) => setActionError(e.message);
  const toggle = (offset: number) => {
    const next = new Set(selected);
    if (!next.delete(offset)) next.add(offset);
    setSelected(next);
  };
  const planRedrive = (selection: RedriveSelection) => {
    setOutcome(null);
    setActionError(null);
    operatorApi.redrive(groupId, topic, selection, false).then((result) => setPlan({ kind: 'redrive', selection, result }), failed);
  };
  const planPurge = (e: Event) => {
    e.preventDefault();
    setOutcome(null);
    setActionError(null);
    const beforeOffset = Number(before);
    if (before.trim() === '' || !Number.isSafeInteger(beforeOffset) || beforeOffset < 0) {
      setActionError(`purge needs an offset of the dead-letter topic (an integer >= 0), not ${JSON.stringify(before)}`);
      return;
    }
    operatorApi.purge(groupId, topic, beforeOffset, false)
      .then((result) => setPlan({ kind: 'purge', beforeOffset, result, records: records.filter((r) => r.offset < beforeOffset) }), failed);
  };
  const execute = (p: Plan) => {
    const done = (text: string) => {
      setPlan(null);
      setSelected(new Set());
      setOutcome(text);
      list.reload();
      group.reload();
    };
    if (p.kind === 'redrive') {
      operatorApi.redrive(groupId, topic, p.selection, true)
        .then((r) => done(`redrove ${r.records.length} dead letter(s) to ${groupId} (attempt 1, due at once); depth now ${r.depth}`), failed);
    } else {
      operatorApi.purge(groupId, topic, p.beforeOffset, true).then((r) => done(`purged ${r.records} dead letter(s); depth now ${r.depth}`), failed);
    }
  };

  const all = records.length > 0 && chosen.length === records.length;
  return html`<${Page} title=${html`Dead letters of <${Link} to=${`/groups/${encodeURIComponent(groupId)}`}>${groupId}<//> · ${topic}`}
      error=${list.error} loading=${list.data === null}>
    ${list.data && html`<p id="dlq-depth">depth <b data-depth>${num(list.data.depth)}</b> waiting in ${list.data.deadLetterTopic}
      ${list.data.depth > records.length ? html` · the oldest ${records.length} shown (<code>onelog dlq list ${groupId} --topic ${topic} --limit N</code> for more)` : ''}</p>`}
    ${group.data && html`<${DepthAlert} group=${group.data} topic=${topic} />`}
    ${actionError && html`<p class="error" role="alert">${actionError}</p>`}
    ${outcome && html`<p id="dlq-outcome" class="outcome">${outcome}</p>`}
    ${plan && html`<${PlanPanel} plan=${plan} groupId=${groupId} onExecute=${() => execute(plan)} onCancel=${() => setPlan(null)} />`}
    ${rights && !rights.redriveDeadLetters && !rights.purgeDeadLetters
      ? html`<p id="dlq-read-only" class="muted">You may look, not redrive or purge: that needs <code>reset</code> on group ${groupId}.</p>` : null}
    ${rights?.redriveDeadLetters && html`<p class="actions">
      <button id="redrive-selected" disabled=${chosen.length === 0} onClick=${() => planRedrive({ offsets: chosen })}>redrive selected (${chosen.length})…</button>
      <button id="redrive-all" disabled=${records.length === 0} onClick=${() => planRedrive({ all: true })}>redrive all…</button></p>`}
    ${rights?.purgeDeadLetters && html`<form id="purge-form" class="actions" onSubmit=${planPurge}>
      purge dead letters before offset <input id="purge-before" inputmode="numeric" size="8" value=${before}
        onInput=${(e: Event) => setBefore((e.target as HTMLInputElement).value)} /> <button type="submit">preview purge…</button></form>`}
    <${Table} id="dead-letters" empty="no dead letters waiting"
      head=${[rights?.redriveDeadLetters ? html`<input type="checkbox" id="select-all" title="select all" checked=${all}
          onChange=${() => setSelected(new Set(all ? [] : records.map((r) => r.offset)))} />` : '',
        'offset', 'original', 'attempts', 'first failure', 'last failure', 'reason', 'key', 'value', '']}
      rows=${records.map((r) => [
        rights?.redriveDeadLetters ? html`<input type="checkbox" data-select=${r.offset} checked=${selected.has(r.offset)} onChange=${() => toggle(r.offset)} />` : '',
        r.offset, position(r.original), r.attempts, time(r.firstFailureAt), time(r.lastFailureAt), r.reason, r.key ?? '-',
        html`<code class="preview">${r.valuePreview ?? '-'}</code>`,
        rights?.redriveDeadLetters ? html`<button data-redrive=${r.offset} onClick=${() => planRedrive({ offset: r.offset })}>redrive…</button>` : '',
      ])} />
    ${group.data && html`<${Actions} group=${group.data} topic=${topic} />`}
  <//>`;
}

/** The dead-letter-depth alert beside the depth: its threshold, and whether it is raised. */
function DepthAlert({ group, topic }: { group: GroupDescription; topic: string }): VNode | null {
  const sub = group.subscriptions.find((s) => s.topic === topic);
  if (!sub) return null;
  const alert = group.alerts.find((a) => a.kind === 'dead-letter-depth' && a.topic === topic && a.resolvedAt === null);
  return html`<p id="dlq-alert" data-alert=${alert ? 'raised' : 'clear'}>
    dead-letter-depth alert at <b>${num(sub.deadLetterAlertDepth)}</b> waiting:
    ${alert ? html` <${Badge} state="dead-letter-depth" /> raised ${time(alert.createdAt)}` : html` <${Badge} state="ok" /> not raised`}</p>`;
}

/** A dry run's answer: exactly what would move, with the button that executes it. */
function PlanPanel({ plan, groupId, onExecute, onCancel }: { plan: Plan; groupId: string; onExecute: () => void; onCancel: () => void }): VNode {
  const rows = (plan.kind === 'redrive' ? plan.result.records : plan.records).slice(0, LISTED).map((r) => [r.offset, position(r.original), r.attempts]);
  const count = plan.kind === 'redrive' ? plan.result.records.length : plan.result.records;
  const what = plan.kind === 'redrive'
    ? `Dry run: would redrive ${count} dead letter(s) back to ${groupId} only, as attempt 1 through its first retry tier, due at once.`
    : `Dry run: would purge ${count} dead letter(s), every waiting one below offset ${plan.beforeOffset} (discarded for good).`;
  const unlisted = rows.length < count ? ` The first ${rows.length} are shown.` : '';
  return html`<div id="dlq-plan" class="plan" data-kind=${plan.kind}>
    <p>${what}${unlisted} Nothing has moved yet.</p>
    <${Table} id="dlq-plan-records" head=${['offset', 'original', 'attempts']} rows=${rows} empty="nothing would move" />
    <p><button id="dlq-execute" disabled=${count === 0} onClick=${onExecute}>execute: ${plan.kind} ${count}</button>
      <button id="dlq-cancel" onClick=${onCancel}>cancel</button></p>
  </div>`;
}

/** Redrives and purges executed so far on this topic's dead letters, who asked (the signed-in user) and when. */
function Actions({ group, topic }: { group: GroupDescription; topic: string }): VNode {
  return html`<h2>Executed</h2>
    <${Table} id="dlq-actions" empty="no redrive or purge yet" head=${['executed', 'by', 'action', 'offsets', 'records']}
      rows=${group.deadLetterActions.filter((a) => a.topic === topic).map((a) => [
        time(a.executedAt), a.requestedBy, a.action, a.endOffset - a.firstOffset === 1 ? a.firstOffset : `${a.firstOffset} to ${a.endOffset - 1}`, a.records,
      ])} />`;
}
