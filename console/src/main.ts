/**
 * The onelog web console: topics, groups (lag, time lag and retention headroom per partition, charts of the
 * last hour, members, alerts, resets, dead letters) and alerts, read from the broker's HTTP API every few
 * seconds. Preact (with htm, so no JSX build step) and uPlot keep it small; routes live in the URL's hash.
 */
import { html } from 'htm/preact';
import { render } from 'preact';
import type { VNode } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { AlertsPage } from './pages/alerts.js';
import { GroupPage, GroupsPage } from './pages/groups.js';
import { TopicPage, TopicsPage } from './pages/topics.js';
import './style.css';

/** The page for a hash route: `#/topics/T`, `#/groups/G`, `#/groups`, `#/alerts`, else the topics. */
function route(hash: string): VNode {
  const [, noun, name] = hash.replace(/^#/, '').split('/');
  const id = name === undefined ? undefined : decodeURIComponent(name);
  if (noun === 'topics' && id) return html`<${TopicPage} topic=${id} key=${id} />`;
  if (noun === 'groups' && id) return html`<${GroupPage} groupId=${id} key=${id} />`;
  if (noun === 'groups') return html`<${GroupsPage} />`;
  if (noun === 'alerts') return html`<${AlertsPage} />`;
  return html`<${TopicsPage} />`;
}

function App(): VNode {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return html`<header>
      <b>onelog</b>
      <nav><a href="#/topics">Topics</a> <a href="#/groups">Groups</a> <a href="#/alerts">Alerts</a> <a href="/metrics">Metrics</a></nav>
    </header>
    <main>${route(hash)}</main>`;
}

render(html`<${App} />`, document.getElementById('app')!);
