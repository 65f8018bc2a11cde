/**
 * Replay with a preview (`#/groups/G/replay`; docs/consumer-groups.md, "Resets, history and checkpoints"): reset a
 * group's offsets of a topic to the earliest, the latest, an offset, a time, a checkpoint or a shift, for one partition
 * or all. The preview is the broker's dry run: each partition's current and new offset and what the group will re-read
 * (how many, and the first few records) or skip; executing applies it at the safe point as `onelog offsets reset
 * --execute` does (the page says so while it waits). And a checkpoint of the group's offsets saved by name. The
 * buttons are those the signed-in user may use (`GET /access`).
 */
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { useState } from 'preact/hooks';
import { api, operatorApi } from '../api.js';
import type { JsonRecord, ResetOffsetsResult, ResetSpec } from '../api.js';
import { Link, Page, Table, useData } from '../components.js';
import { num, time } from '../format.js';

/** Records of each partition shown in the preview of what it will re-read. */
const FIRST_RECORDS = 3;
/** Characters of a value shown in the preview. */
const VALUE_CHARS = 80;

type Target = ResetSpec['to'];
const TARGETS: Array<[Target, string]> = [
  ['earliest', 'the earliest'], ['latest', 'the latest'], ['offset', 'an offset'], ['datetime', 'a time (UTC)'],
  ['checkpoint', 'a checkpoint'], ['shift', 'a shift (± records)'],
];

/** The spec the form says, or the reason it says none. */
function specOf(to: Target, value: string): ResetSpec | string {
  const n = Number(value);
  const integer = value.trim() !== '' && Number.isSafeInteger(n);
  switch (to) {
    case 'earliest': case 'latest': return { to };
    case 'offset': return integer && n >= 0 ? { to, offset: n } : `an offset is an integer >= 0, not ${JSON.stringify(value)}`;
    case 'shift': return integer ? { to, shiftBy: n } : `a shift is an integer (negative: back), not ${JSON.stringify(value)}`;
    case 'checkpoint': return value === '' ? 'choose a checkpoint' : { to, name: value };
    case 'datetime': {
      const ms = Date.parse(`${value}Z`);
      return Number.isNaN(ms) ? `a time is YYYY-MM-DDTHH:MM (UTC), not ${JSON.stringify(value)}` : { to, timestamp: ms };
    }
  }
}

/** A planned reset with, per partition that would move back, its first records to re-read. */
interface Preview {
  result: ResetOffsetsResult;
  spec: ResetSpec;
  partition: number | null;
  first: Map<number, JsonRecord[] | string>;
}

/** The replay page of `groupId`: a reset of one of its topics, previewed then executed, and its checkpoints. */
export function ReplayPage({ groupId }: { groupId: string }): VNode {
  const group = useData(() => api.group(groupId), [groupId]);
  const topics = group.data?.subscriptions.map((s) => s.topic) ?? [];
  const [chosenTopic, setTopic] = useState<string | null>(null);
  const topic = chosenTopic ?? topics[0] ?? null;
  const rights = useData(async () => (topic === null ? null : (await operatorApi.access(groupId, topic)).actions), [groupId, topic]).data;
  const [partition, setPartition] = useState('all');
  const [to, setTo] = useState<Target>('earliest');
  const [value, setValue] = useState('');
  const [preview, setPreview] = useState<Preview | null>(null);
  const [state, setState] = useState<{ waiting?: boolean; done?: string; error?: string }>({});
  const [checkpointName, setCheckpointName] = useState('');
  const [checkpointDone, setCheckpointDone] = useState<string | null>(null);

  const partitions = group.data?.subscriptions.find((s) => s.topic === topic)?.partitions.map((p) => p.partition) ?? [];
  const fail = (e: Error) => setState({ error: e.message });
  const plan = async (e: Event) => {
    e.preventDefault();
    setPreview(null);
    const spec = specOf(to, value);
    if (topic === null) return;
    if (typeof spec === 'string') return setState({ error: spec });
    setState({});
    const one = partition === 'all' ? null : Number(partition);
    try {
      const result = await operatorApi.reset(groupId, topic, spec, one, false);
      const first = new Map<number, JsonRecord[] | string>();
      await Promise.all(result.partitions.filter((p) => p.currentOffset !== null && p.newOffset < p.currentOffset).map(async (p) => {
        first.set(p.partition, await operatorApi.recordsFrom(topic, p.partition, p.newOffset, FIRST_RECORDS).catch((err: Error) => err.message));
      }));
      setPreview({ result, spec, partition: one, first });
    } catch (err) {
      fail(err as Error);
    }
  };
  const execute = (p: Preview) => {
    setState({ waiting: true });
    operatorApi.reset(groupId, p.result.topic, p.spec, p.partition, true).then((r) => {
      setPreview(null);
      setState({ done: `applied: ${r.partitions.map((q) => `${r.topic}/${q.partition} ${num(q.currentOffset)} → ${num(q.newOffset)}`).join(', ')}` });
      group.reload();
    }, fail);
  };
  const saveCheckpoint = (e: Event) => {
    e.preventDefault();
    setCheckpointDone(null);
    operatorApi.checkpoint(groupId, checkpointName.trim()).then((c) => {
      setCheckpointDone(`saved checkpoint ${c.name}: ${c.offsets.length} partition offsets`);
      group.reload();
    }, fail);
  };

  return html`<${Page} title=${html`Replay <${Link} to=${`/groups/${encodeURIComponent(groupId)}`}>${groupId}<//>`} error=${group.error} loading=${group.data === null}>
    ${topics.length === 0 ? html`<p class="muted">${groupId} subscribes to no topic.</p>` : html`
    ${rights && !rights.resetOffsets ? html`<p id="replay-read-only" class="muted">Resetting ${topic} (its preview too) needs <code>reset</code> on
      group ${groupId} and <code>read</code> on the topic.</p>` : null}
    <form id="replay-form" class="actions" onSubmit=${plan}>
      reset <select id="replay-topic" value=${topic} onChange=${(e: Event) => { setTopic((e.target as HTMLSelectElement).value); setPartition('all'); setPreview(null); }}>
        ${topics.map((t) => html`<option value=${t}>${t}</option>`)}</select>
      partition <select id="replay-partition" value=${partition} onChange=${(e: Event) => { setPartition((e.target as HTMLSelectElement).value); setPreview(null); }}>
        <option value="all">all</option>${partitions.map((p) => html`<option value=${String(p)}>${p}</option>`)}</select>
      to <select id="replay-to" value=${to} onChange=${(e: Event) => { setTo((e.target as HTMLSelectElement).value as Target); setValue(''); setPreview(null); }}>
        ${TARGETS.map(([t, label]) => html`<option value=${t}>${label}</option>`)}</select>
      ${to === 'checkpoint'
        ? html`<select id="replay-value" value=${value} onChange=${(e: Event) => setValue((e.target as HTMLSelectElement).value)}>
            <option value="">(choose)</option>${group.data!.checkpoints.map((c) => html`<option value=${c.name}>${c.name}</option>`)}</select>`
        : to === 'earliest' || to === 'latest' ? null
          : html`<input id="replay-value" type=${to === 'datetime' ? 'datetime-local' : 'text'} size="12" value=${value}
              onInput=${(e: Event) => setValue((e.target as HTMLInputElement).value)} />`}
      <button type="submit" id="replay-preview" disabled=${rights?.resetOffsets !== true}>preview</button>
    </form>`}
    ${state.error && html`<p class="error" role="alert">${state.error}</p>`}
    ${state.waiting && html`<p id="replay-waiting" class="outcome">Waiting for the safe point: the group's members commit what they processed and let go
      of the partitions at their next heartbeat; the reset applies once nobody holds them, then they are assigned again and
      resume from the new offsets (as <code>onelog offsets reset --execute</code>).</p>`}
    ${state.done && html`<p id="replay-done" class="outcome">${state.done}</p>`}
    ${preview && html`<${PreviewPanel} preview=${preview} waiting=${state.waiting === true}
      onExecute=${() => execute(preview)} onCancel=${() => setPreview(null)} />`}
    <h2>Checkpoints</h2>
    ${group.data && html`<${Table} id="checkpoints" empty="no checkpoints" head=${['name', 'saved', 'topics']}
      rows=${group.data.checkpoints.map((c) => [c.name, time(c.createdAt), c.topics.join(', ')])} />`}
    ${rights?.saveCheckpoint && html`<form id="checkpoint-form" class="actions" onSubmit=${saveCheckpoint}>
      save the group's committed offsets as checkpoint <input id="checkpoint-name" size="20" maxlength="200" value=${checkpointName}
        onInput=${(e: Event) => setCheckpointName((e.target as HTMLInputElement).value)} /> <button type="submit">save checkpoint</button></form>`}
    ${checkpointDone && html`<p id="checkpoint-done" class="outcome">${checkpointDone}</p>`}
  <//>`;
}

/** What the group will do once moved: re-read (back) or skip (forward), counted in offsets. */
function change(current: number | null, next: number): VNode | string {
  if (current === null) return `no committed offset: starts at ${num(next)}`;
  if (next < current) return html`<b data-change="reread">re-reads ${num(current - next)}</b>`;
  if (next > current) return html`<b data-change="skip">skips ${num(next - current)}</b>`;
  return 'no change';
}

/** The dry run's table, with the button that executes it (a preview is only made for who may reset). */
function PreviewPanel({ preview, waiting, onExecute, onCancel }: { preview: Preview; waiting: boolean; onExecute: () => void; onCancel: () => void }): VNode {
  const { result } = preview;
  const moves = result.partitions.some((p) => p.currentOffset !== p.newOffset);
  return html`<div id="replay-plan" class="plan">
    <p>Dry run of ${result.topic}: nothing has moved yet. Counts are in offsets (a compacted topic's gaps make them upper bounds).</p>
    <${Table} id="replay-partitions" head=${['partition', 'current', 'new', 'change', `first records to re-read (up to ${FIRST_RECORDS})`]}
      rows=${result.partitions.map((p) => [
        p.partition, num(p.currentOffset), html`<span data-new=${p.partition}>${num(p.newOffset)}</span>${p.clamped ? html` <span class="muted">(clamped to the ${p.clamped})</span>` : ''}`,
        change(p.currentOffset, p.newOffset), firstRecords(preview.first.get(p.partition)),
      ])} />
    <p><button id="replay-execute" disabled=${!moves || waiting} onClick=${onExecute}>execute at the safe point</button>
      <button id="replay-cancel" disabled=${waiting} onClick=${onCancel}>cancel</button></p>
  </div>`;
}

/** A partition's first records to re-read, or why they could not be read. */
function firstRecords(records: JsonRecord[] | string | undefined): VNode | string {
  if (records === undefined) return '';
  if (typeof records === 'string') return html`<span class="muted">${records}</span>`;
  return html`<ul class="records">${records.map((r) => html`<li data-offset=${r.offset}>@${r.offset} ${time(r.timestamp)} <b>${r.key ?? '-'}</b>
    <code class="preview">${(r.value ?? '-').slice(0, VALUE_CHARS)}</code></li>`)}</ul>`;
}
