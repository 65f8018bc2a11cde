/** Small pieces every page uses: data loading with live reloads, tables, links, state badges. */
import { html } from 'htm/preact';
import type { ComponentChildren, VNode } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { isLive, onChanges } from './live.js';
import type { BrokerChange } from './live.js';

/** How often a page reloads what it shows while the broker's event stream is down, ms. */
export const REFRESH_MS = 5000;
/** How often it reloads while the stream is up, whatever the changes, ms (time lag and headroom move with the clock). */
export const LIVE_REFRESH_MS = 60_000;
/** Shortest time between two reloads of one page's data on changes, ms. */
export const MIN_RELOAD_MS = 1000;

/**
 * Loads `load()` now, then again on each change from the broker's event stream that `concerns` keeps (default:
 * any), at most every {@link MIN_RELOAD_MS}; and every {@link REFRESH_MS} while the stream is down (every
 * {@link LIVE_REFRESH_MS} while it is up). One load at a time: a reload asked for meanwhile runs after it.
 * `reload` loads at once (after an action).
 */
export function useData<T>(
  load: () => Promise<T>, deps: unknown[], concerns: (change: BrokerChange) => boolean = () => true,
): { data: T | null; error: string | null; reload: () => void } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  // The latest of each, so that a reload asked for during a load (the deps changed meanwhile) loads what is current.
  const latest = useRef({ load, concerns });
  latest.current = { load, concerns };
  const state = useRef({ loading: false, again: false, lastAt: 0, timer: null as ReturnType<typeof setTimeout> | null });
  const run = useCallback(() => {
    const s = state.current;
    if (s.loading) {
      s.again = true;
      return;
    }
    s.loading = true;
    s.lastAt = Date.now();
    latest.current.load().then((d) => { setData(d); setError(null); }, (e: Error) => setError(e.message)).finally(() => {
      s.loading = false;
      if (s.again) {
        s.again = false;
        run();
      }
    });
  }, []);
  useEffect(() => {
    const s = state.current;
    run();
    const soon = () => {
      if (s.timer === null) s.timer = setTimeout(() => { s.timer = null; run(); }, Math.max(0, s.lastAt + MIN_RELOAD_MS - Date.now()));
    };
    const stop = onChanges((batch) => {
      if (batch.truncated || batch.changes.some((c) => latest.current.concerns(c))) soon();
    });
    const poll = setInterval(() => {
      if (!isLive() || Date.now() - s.lastAt >= LIVE_REFRESH_MS) run();
    }, REFRESH_MS);
    return () => {
      stop();
      clearInterval(poll);
      if (s.timer !== null) clearTimeout(s.timer);
      s.timer = null;
    };
  }, deps);
  return { data, error, reload: run };
}

/** A page's frame: title, error line, content (or a loading line until there is data). */
export function Page({ title, error, loading, children }: { title: ComponentChildren; error: string | null; loading: boolean; children?: ComponentChildren }): VNode {
  return html`<section>
    <h1>${title}</h1>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${loading && !error ? html`<p class="muted">loading…</p>` : loading ? null : children}
  </section>`;
}

/** A table: header cells, then rows of cells; `id` names it for tests and links. */
export function Table({ id, head, rows, empty = 'none' }: { id?: string; head: string[]; rows: ComponentChildren[][]; empty?: string }): VNode {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`<table id=${id}>
    <thead><tr>${head.map((h) => html`<th>${h}</th>`)}</tr></thead>
    <tbody>${rows.map((r) => html`<tr>${r.map((c) => html`<td>${c}</td>`)}</tr>`)}</tbody>
  </table>`;
}

/** A link inside the console (hash routing). */
export const Link = ({ to, children }: { to: string; children: ComponentChildren }): VNode => html`<a href=${`#${to}`}>${children}</a>`;

/** A partition or alert state as a colored badge. */
export const Badge = ({ state }: { state: string }): VNode => html`<span class=${`badge badge-${state}`}>${state}</span>`;
