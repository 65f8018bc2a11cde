/**
 * In-process members (webhook dispatchers, the consumers of WebSocket push streams, embedded consumers) meet fetches
 * that answer at once with nothing: with `maxWaitMs` 0, and once the broker ended its long-polls to shut down. With the
 * broker in-process such an answer comes all in promises, so a member that fetched again at once looped without ever
 * yielding to the event loop: no timer fired again, no socket was read, and Broker.close() (or serve's shutdown) never
 * returned. Each scenario runs in a child process (test/fixtures/idle-loops-child.mjs, on dist/: build first), killed
 * at the deadline, since a blocked event loop would hold the test runner too; its timer prints `tick` every 20 ms.
 */
import { describe, expect, it } from 'vitest';
import { startChild } from '../helpers/children.js';
import { tmpDir } from '../helpers/tmp.js';

/** Runs a scenario; resolves with the ticks printed between `acting` and `closed`, fails if it never closed. */
async function ticksWhileActing(scenario: string): Promise<number> {
  const child = startChild('idle-loops-child.mjs', { dataDir: tmpDir(), scenario });
  await child.line((l) => l === 'closed', `closed (${scenario})`, 10_000);
  const { code } = await child.exited;
  expect(code).toBe(0);
  return child.lines.slice(child.lines.indexOf('acting'), child.lines.indexOf('closed')).filter((l) => l === 'tick').length;
}

describe('an idle in-process member does not hold the event loop', () => {
  it('Broker.close() right after subscribing a webhook to a refusing endpoint, on an empty topic, returns (issue 31)', async () => {
    await ticksWhileActing('close-after-subscribe');
  });

  it('a webhook dispatcher whose fetches do not wait (webhooks.maxWaitMs 0) lets timers fire while the broker runs', async () => {
    // 300 ms at a tick every 20 ms: a handful at least, even on a loaded machine.
    expect(await ticksWhileActing('webhook-no-wait')).toBeGreaterThanOrEqual(3);
  });

  it('serve\'s shutdown (app.close(), then endWaits) with a WebSocket push stream at the end of its log completes', async () => {
    await ticksWhileActing('push-stream-shutdown');
  });
});
