/**
 * The onelog web console: an overview (brokers, topics by size, groups worst first, active alerts), topics and
 * their records, groups (lag, time lag and retention headroom per partition, charts, members, alerts, resets), a
 * group's dead letters (redrive, purge) and replay (resets with a preview), and alerts, read from the broker's HTTP
 * API and reloaded as the broker's event stream tells of changes (polling every few seconds while it is down: the
 * header says which). Preact (with htm, so no JSX build step) and uPlot keep it small; routes live in the URL's hash.
 */
import { html } from 'htm/preact';
import { render } from 'preact';
import type { VNode } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { token, TOKEN_NEEDED } from './api.js';
import { AlertsPage } from './pages/alerts.js';
import { DeadLettersPage } from './pages/dead-letters.js';
import { GroupPage, GroupsPage } from './pages/groups.js';
import { OverviewPage } from './pages/overview.js';
import { isLive, LIVE_CHANGED } from './live.js';
import { recordsRoute } from './pages/records.js';
import { ReplayPage } from './pages/replay.js';
import { TopicPage, TopicsPage } from './pages/topics.js';
import './style.css';

/**
 * The page for a hash route: `#/topics/T` (and its records), `#/topics`, `#/groups/G`, `#/groups/G/dead-letters/T`,
 * `#/groups/G/replay`, `#/groups`, `#/alerts`, else the overview.
 */
function route(hash: string): VNode {
  const records = recordsRoute(hash); // #/topics/T/records, #/topics/T/records/P/OFFSET
  if (records) return records;
  const [, noun, name, view, arg] = hash.replace(/^#/, '').split('/');
  const id = name === undefined ? undefined : decodeURIComponent(name);
  if (noun === 'groups' && id && view === 'dead-letters' && arg) {
    return html`<${DeadLettersPage} groupId=${id} topic=${decodeURIComponent(arg)} key=${`${id}/${arg}`} />`;
  }
  if (noun === 'groups' && id && view === 'replay') return html`<${ReplayPage} groupId=${id} key=${id} />`;
  if (noun === 'topics' && id) return html`<${TopicPage} topic=${id} key=${id} />`;
  if (noun === 'groups' && id) return html`<${GroupPage} groupId=${id} key=${id} />`;
  if (noun === 'groups') return html`<${GroupsPage} />`;
  if (noun === 'alerts') return html`<${AlertsPage} />`;
  if (noun === 'topics') return html`<${TopicsPage} />`;
  return html`<${OverviewPage} />`;
}

/** Asks for a user's token once the broker answers 401 (docs/security.md); keeps it for this tab only. */
function TokenForm(): VNode {
  const [value, setValue] = useState('');
  const submit = (e: Event) => {
    e.preventDefault();
    token.set(value.trim());
    location.reload();
  };
  return html`<form id="token-form" onSubmit=${submit}>
    <p>This broker has users: give a user's token (<code>onelog users create NAME</code> prints one).</p>
    <input id="token" type="password" autocomplete="off" placeholder="onelog_..." value=${value} onInput=${(e: Event) => setValue((e.target as HTMLInputElement).value)} />
    <button type="submit">Use token</button>
  </form>`;
}

function App(): VNode {
  const [hash, setHash] = useState(location.hash);
  const [needsToken, setNeedsToken] = useState(false);
  const [live, setLive] = useState(isLive());
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    const onTokenNeeded = () => setNeedsToken(true);
    const onLive = () => setLive(isLive());
    addEventListener('hashchange', onChange);
    addEventListener(TOKEN_NEEDED, onTokenNeeded);
    addEventListener(LIVE_CHANGED, onLive);
    return () => {
      removeEventListener('hashchange', onChange);
      removeEventListener(TOKEN_NEEDED, onTokenNeeded);
      removeEventListener(LIVE_CHANGED, onLive);
    };
  }, []);
  const signOut = () => {
    token.set(null);
    location.reload();
  };
  return html`<header>
      <b>onelog</b>
      <nav><a href="#/">Overview</a> <a href="#/topics">Topics</a> <a href="#/groups">Groups</a> <a href="#/alerts">Alerts</a> <a href="/metrics">Metrics</a>
        ${token.get() ? html` <a href="#" id="sign-out" onClick=${signOut}>Forget token</a>` : null}</nav>
      <span id="live-status" class=${live ? 'live' : 'polling'} title=${live ? 'pages reload as the broker changes' : 'no event stream: pages reload every 5 s'}>${live ? 'live' : 'polling'}</span>
    </header>
    <main>${needsToken ? html`<${TokenForm} />` : route(hash)}</main>`;
}

render(html`<${App} />`, document.getElementById('app')!);
