/** Small pieces every page uses: data loading with refresh, tables, links, state badges. */
import { html } from 'htm/preact';
import type { ComponentChildren, VNode } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';

/** How often a page reloads what it shows, ms. */
export const REFRESH_MS = 5000;

/** Loads `load()` now and every {@link REFRESH_MS}; `reload` loads at once (after an action). */
export function useData<T>(load: () => Promise<T>, deps: unknown[]): { data: T | null; error: string | null; reload: () => void } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback(() => {
    load().then((d) => { setData(d); setError(null); }, (e: Error) => setError(e.message));
  }, deps);
  useEffect(() => {
    run();
    const timer = setInterval(run, REFRESH_MS);
    return () => clearInterval(timer);
  }, [run]);
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
