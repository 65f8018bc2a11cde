/**
 * One webhook attempt: POSTs a batch to the endpoint with undici's fetch and says whether it was
 * acknowledged. Only a 2xx acknowledges; any other status (redirects included: they are not followed), a
 * network error, or no answer within the ack deadline is a failure. Never throws.
 */

import { fetch } from 'undici';
import { OnelogError } from '../protocol/errors.js';
import type { OutboundPolicy } from './outbound.js';

/** What one POST came to. */
export type PostOutcome =
  | { ok: true; status: number }
  /** `status` when the endpoint answered; `error` when it did not (network error, timeout, abort). */
  | { ok: false; status?: number; error?: string };

/**
 * POSTs `body` (JSON) to `url`, where `outbound` allows. `ctrl` aborts the attempt (a shutdown or a go-back); after `ackTimeoutMs`
 * without an answer it is aborted as timed out. The response body is read and dropped, so the connection
 * is reused.
 */
export async function postBatch(
  url: string,
  body: string,
  headers: Record<string, string>,
  ackTimeoutMs: number,
  ctrl: AbortController,
  outbound: OutboundPolicy,
): Promise<PostOutcome> {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctrl.abort();
  }, ackTimeoutMs);
  timer.unref();
  try {
    outbound.check(url, 'webhook');
    const res = await fetch(url, {
      method: 'POST', body, redirect: 'manual', signal: ctrl.signal,
      headers: { 'content-type': 'application/json', ...headers },
      dispatcher: outbound.dispatcher,
    });
    // Decided on the status line: a slow or broken body after a 2xx does not undo the acknowledgement.
    const ok = res.status >= 200 && res.status < 300;
    await res.arrayBuffer().catch(() => undefined);
    return ok ? { ok, status: res.status } : { ok, status: res.status };
  } catch (err) {
    if (err instanceof OnelogError) return { ok: false, error: err.message };
    if (timedOut) return { ok: false, error: `no answer within ackTimeoutMs (${ackTimeoutMs} ms)` };
    return { ok: false, error: describeFetchError(err) };
  } finally {
    clearTimeout(timer);
  }
}

/** undici says `fetch failed` and hides the reason (ECONNREFUSED, ...) in `cause`: name both. */
function describeFetchError(err: unknown): string {
  const e = err as { message?: string; cause?: { message?: string; code?: string } };
  // A refusal of the outbound policy carries its reason in the message; a system error (ECONNREFUSED) in the code.
  const cause = e.cause?.code === 'FORBIDDEN' ? e.cause.message : e.cause?.code ?? e.cause?.message;
  return cause ? `${e.message ?? String(err)}: ${cause}` : e.message ?? String(err);
}
