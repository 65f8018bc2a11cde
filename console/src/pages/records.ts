/**
 * The record browser: a topic's records by partition, from an offset, a time or the newest, searched by key (exact or
 * prefix) within a bounded scan whose range is shown; each record with its offset, timestamp, key, headers and value
 * (JSON pretty-printed, text, or hex), long values cut with a link to the record's own page. Both have stable URLs: a
 * search is `#/topics/T/records?partition=P&from=newest|offset|time&offset=O&time=T&key=K&match=exact|prefix`, a
 * record `#/topics/T/records/P/OFFSET`.
 */
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, recordsApi } from '../api.js';
import type { JsonPageRecord, JsonRecordPage, KeyMatch, RecordQuery } from '../api.js';
import { Link, Page, Table, useData } from '../components.js';
import { bytes, num } from '../format.js';
import { fromBase64, showBytes } from '../record-bytes.js';
import type { ShownBytes } from '../record-bytes.js';

/** Records a page of the browser shows. */
const PAGE_RECORDS = 50;
/** Value bytes a record's own page asks for: all of any record the broker accepts by default (1 MiB) and more. */
const WHOLE_VALUE_BYTES = 64 * 1024 * 1024;

/** The page for `#/topics/T/records[?SEARCH]` or `#/topics/T/records/P/OFFSET`, or null for another route. */
export function recordsRoute(hash: string): VNode | null {
  const m = /^#\/topics\/([^/?]+)\/records(?:\/(\d+)\/(\d+))?(?:\?(.*))?$/.exec(hash);
  if (!m) return null;
  const topic = decodeURIComponent(m[1]!);
  if (m[2] === undefined) return html`<${RecordsPage} topic=${topic} search=${m[4] ?? ''} key=${topic} />`;
  const [partition, offset] = [Number(m[2]), Number(m[3])];
  return html`<${RecordPage} topic=${topic} partition=${partition} offset=${offset} key=${`${topic}/${partition}/${offset}`} />`;
}

const recordPath = (topic: string, partition: number, offset: number) => `/topics/${encodeURIComponent(topic)}/records/${partition}/${offset}`;

/** A time typed in the form (`2015-09-12T12:00` or with seconds, UTC) as ms since the epoch, or NaN. */
const utcMs = (text: string): number => Date.parse(/Z$|[+-]\d\d:\d\d$/.test(text) ? text : `${text}Z`);
/** A timestamp as the form's UTC time, to the millisecond. */
const utcText = (ms: number): string => new Date(ms).toISOString().replace('Z', '');

/** Bytes shown in a block: `data-kind` says how (json, text, hex, null). */
const Bytes = ({ shown, id }: { shown: ShownBytes; id?: string }): VNode => html`<pre class=${`bytes bytes-${shown.kind}`} id=${id} data-kind=${shown.kind}>${shown.text}</pre>`;

/** A record's headers, `name: value` a line. */
const Headers = ({ headers }: { headers: JsonPageRecord['headers'] }): VNode => {
  const entries = Object.entries(headers);
  if (entries.length === 0) return html`<span class="muted">none</span>`;
  return html`<div class="headers">${entries.map(([k, v]) => html`<div><b>${k}</b>: <code>${showBytes(v).text}</code></div>`)}</div>`;
};

/** The form's fields, as typed. */
interface Draft {
  partition: string;
  from: 'newest' | 'offset' | 'time';
  offset: string;
  time: string;
  key: string;
  keyMatch: KeyMatch;
}

/** The form's fields from a search's hash query (`partition=2&from=time&time=...&key=...&match=prefix`); defaults for the rest. */
function draftOf(search: string): Draft {
  const p = new URLSearchParams(search);
  const from = p.get('from');
  return {
    partition: p.get('partition') ?? '0', from: from === 'offset' || from === 'time' ? from : 'newest',
    offset: p.get('offset') ?? '0', time: p.get('time') ?? '', key: p.get('key') ?? '', keyMatch: p.get('match') === 'prefix' ? 'prefix' : 'exact',
  };
}

/** A draft as its search's hash query: only the fields it uses. */
function searchOf(draft: Draft): string {
  const p = new URLSearchParams({ partition: draft.partition, from: draft.from });
  if (draft.from === 'offset') p.set('offset', draft.offset);
  if (draft.from === 'time') p.set('time', draft.time);
  if (draft.key) {
    p.set('key', draft.key);
    p.set('match', draft.keyMatch);
  }
  return p.toString();
}

/** The query a draft asks for. @throws Error naming a field typed wrong */
function queryOf(draft: Draft): RecordQuery {
  let start: RecordQuery['start'] = 'newest';
  if (draft.from === 'offset') {
    if (!/^\d+$/.test(draft.offset)) throw new Error('give the offset to start from: an integer >= 0');
    start = { offset: Number(draft.offset) };
  } else if (draft.from === 'time') {
    const ms = utcMs(draft.time);
    if (Number.isNaN(ms)) throw new Error('give the time to start from: YYYY-MM-DDTHH:MM[:SS], UTC');
    start = { timestamp: ms };
  }
  return { partition: Number(draft.partition), start, limit: PAGE_RECORDS, ...(draft.key ? { key: draft.key, keyMatch: draft.keyMatch } : {}) };
}

/** What the page read: the offsets scanned, and whether the scan bound ended a key search early. */
function ScanLine({ page, query, onNext }: { page: JsonRecordPage; query: RecordQuery; onNext: () => void }): VNode {
  const { fromOffset, toOffset, records } = page.scanned;
  const end = page.nextOffset >= page.highWatermark;
  return html`<p id="records-scanned" data-from=${fromOffset} data-to=${toOffset} data-scanned=${records} data-key=${query.key ?? ''} data-match=${query.key ? query.keyMatch : ''}>
    partition ${page.partition} (log start ${num(page.logStartOffset)}, high watermark ${num(page.highWatermark)}):${' '}
    ${query.key ? html`<b>${num(page.records.length)}</b> with key ${query.keyMatch === 'prefix' ? 'starting with' : ''} <code>${query.key}</code> among ` : ''}
    offsets <b>${num(fromOffset)}</b> to <b>${num(Math.max(fromOffset, toOffset - 1))}</b> (${num(records)} records read)
    ${page.scanLimitReached ? html` · <span class="warn" id="records-scan-limit">the scan stopped at its bound${query.start === 'newest' ? ': older records were not searched' : ''}</span>` : ''}
    ${end ? html` · <span class="muted">end of the partition</span>` : html` <button id="records-next" onClick=${onNext}>next from ${num(page.nextOffset)}</button>`}
  </p>`;
}

/**
 * A topic's records: the form (partition, start, key search), the range the page read, and the records; refreshed as
 * every page is ({@link useData}).
 */
function RecordsPage({ topic, search }: { topic: string; search: string }): VNode {
  const described = useData(() => api.topic(topic), [topic]).data;
  const [draft, setDraft] = useState<Draft>(() => draftOf(search));
  useEffect(() => setDraft(draftOf(search)), [search]);
  // The search in the URL is the one shown (a URL typed wrong shows the newest records and says why).
  const applied = useMemo(() => {
    try {
      return { query: queryOf(draftOf(search)), error: null };
    } catch (err) {
      return { query: queryOf(draftOf('')), error: `${(err as Error).message} (in the URL)` };
    }
  }, [search]);
  const { query } = applied;
  const [formError, setFormError] = useState<string | null>(null);
  // Each page with the query it answers: the one shown until the next arrives is described as what it is.
  const { data, error, reload } = useData(async () => ({ query, page: await recordsApi.page(topic, query) }), [topic, JSON.stringify(query)]);
  const set = (field: keyof Draft) => (e: Event) => setDraft({ ...draft, [field]: (e.target as HTMLInputElement | HTMLSelectElement).value });
  /** Shows a search: its URL is the page's, so it can be shared and reloaded. */
  const go = (target: Draft) => {
    const hash = `#/topics/${encodeURIComponent(topic)}/records?${searchOf(target)}`;
    if (location.hash === hash) reload();
    else location.hash = hash;
  };
  const submit = (e: Event) => {
    e.preventDefault();
    try {
      queryOf(draft);
      setFormError(null);
      go(draft);
    } catch (err) {
      setFormError((err as Error).message);
    }
  };
  const next = (page: JsonRecordPage) => () => go({ ...draftOf(search), from: 'offset', offset: String(page.nextOffset) });
  const partitions = described?.partitions.length ?? 1;
  return html`<${Page} title=${html`Records of <${Link} to=${`/topics/${encodeURIComponent(topic)}`}>${topic}<//>`} error=${error ?? formError ?? applied.error} loading=${data === null && !formError}>
    <form id="records-form" class="records-form" onSubmit=${submit}>
      <label>partition <select id="records-partition" value=${draft.partition} onChange=${set('partition')}>
        ${Array.from({ length: partitions }, (_, p) => html`<option value=${p}>${p}</option>`)}
      </select></label>
      <label>from <select id="records-from" value=${draft.from} onChange=${set('from')}>
        <option value="newest">the newest</option><option value="offset">an offset</option><option value="time">a time (UTC)</option>
      </select></label>
      ${draft.from === 'offset' && html`<input id="records-offset" inputmode="numeric" size="10" value=${draft.offset} onInput=${set('offset')} />`}
      ${draft.from === 'time' && html`<input id="records-time" placeholder="2015-09-12T12:00:00" size="22" value=${draft.time} onInput=${set('time')} />`}
      <label>key <input id="records-key" placeholder="any" value=${draft.key} onInput=${set('key')} /></label>
      <select id="records-key-match" value=${draft.keyMatch} onChange=${set('keyMatch')}>
        <option value="exact">exact</option><option value="prefix">prefix</option>
      </select>
      <button type="submit" id="records-show">Show</button>
    </form>
    ${data && html`<${ScanLine} page=${data.page} query=${data.query} onNext=${next(data.page)} />
    <${Table} id="records" head=${['offset', 'timestamp (UTC)', 'key', 'headers', 'value']}
      empty=${data.query.key ? 'no record with this key in the offsets read' : 'no records here'}
      rows=${data.page.records.map((r) => [
        html`<span data-offset=${r.offset}><${Link} to=${recordPath(topic, data.page.partition, r.offset)}>${r.offset}<//></span>`,
        utcText(r.timestamp), html`<${Bytes} shown=${showBytes(r.key)} />`, html`<${Headers} headers=${r.headers} />`,
        html`<${Value} record=${r} topic=${topic} partition=${data.page.partition} />`,
      ])} />`}
  <//>`;
}

/** A value, and when the broker cut it, how much of it is shown and a link to all of it. */
function Value({ record, topic, partition }: { record: JsonPageRecord; topic: string; partition: number }): VNode {
  const shown = showBytes(record.value, record.valueTruncated);
  if (!record.valueTruncated) return html`<${Bytes} shown=${shown} />`;
  return html`<${Bytes} shown=${shown} />
    <p class="cut">cut: ${bytes(record.value === null ? 0 : fromBase64(record.value).length)} of ${bytes(record.valueBytes)} shown · <${Link} to=${recordPath(topic, partition, record.offset)}>show all<//></p>`;
}

/** One record, value whole: the page of `#/topics/T/records/P/OFFSET`. */
function RecordPage({ topic, partition, offset }: { topic: string; partition: number; offset: number }): VNode {
  const { data, error } = useData(() => recordsApi.page(topic, { partition, start: { offset }, limit: 1, maxValueBytes: WHOLE_VALUE_BYTES }), [topic, partition, offset]);
  const r = data?.records[0];
  const title = html`<${Link} to=${`/topics/${encodeURIComponent(topic)}/records`}>${topic}<//> / partition ${partition} / offset ${offset}`;
  return html`<${Page} title=${title} error=${error} loading=${data === null}>
    ${r?.offset === offset
      ? html`<table id="record" class="record">
          <tr><th>offset</th><td data-offset=${r.offset}>${r.offset}</td></tr>
          <tr><th>timestamp (UTC)</th><td>${utcText(r.timestamp)} <span class="muted">(${r.timestamp})</span></td></tr>
          <tr><th>key</th><td><${Bytes} shown=${showBytes(r.key)} id="record-key" /></td></tr>
          <tr><th>headers</th><td><${Headers} headers=${r.headers} /></td></tr>
          <tr><th>value</th><td>${r.valueBytes === null ? '' : html`<p class="muted">${bytes(r.valueBytes)}</p>`}<${Bytes} shown=${showBytes(r.value, r.valueTruncated)} id="record-value" /></td></tr>
        </table>`
      : html`<p id="record-missing">no record at offset ${num(offset)}${r
          ? html` (compaction removed it): the next is <${Link} to=${recordPath(topic, partition, r.offset)}>${r.offset}<//>`
          : data ? ` yet: the partition's records are at offsets ${num(data.logStartOffset)} to ${num(data.highWatermark - 1)}` : ''}</p>`}
  <//>`;
}
