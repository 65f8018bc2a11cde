/**
 * One broker's URL reaches every group in cluster mode (docs/cluster.md, "Seeing the cluster"): a request that asks for
 * it ({@link FORWARD_HEADER}: `coordinator`) and that this broker answers `NOT_COORDINATOR` naming the group's
 * coordinator (`coordinatorUrl`, a live broker's advertised URL) is sent on to it once, with the caller's
 * authorization and body, and the coordinator's answer is returned as it is. The console asks for it, since it talks
 * only to the broker that served it; clients do not (HttpApi follows `NOT_COORDINATOR` and goes to the coordinator
 * itself, with no extra hop). A forwarded request is never forwarded again ({@link FORWARDED_HEADER}), and one the
 * coordinator does not answer within the request timeout gets the `NOT_COORDINATOR` answer.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OnelogError } from '../protocol/errors.js';

/** Sent by a caller (the console) that wants a group request another broker coordinates answered by that broker: `coordinator`. */
export const FORWARD_HEADER = 'x-onelog-forward';

/** Set on a forwarded request: the broker receiving it answers it, whatever it answers. */
export const FORWARDED_HEADER = 'x-onelog-forwarded';

/** Request headers forwarded to the coordinator (who asks, and what the body is). */
const FORWARDED_REQUEST_HEADERS = ['authorization', 'content-type', 'accept'] as const;

/**
 * Sends `request` on to the coordinator `error` names and answers with its answer.
 * @param timeoutMs how long the coordinator may take, ms (the server's request timeout)
 * @returns whether the coordinator answered (`reply` is sent); false when the request did not ask for it, `error`
 *   names no coordinator, the request was forwarded already, or the coordinator could not be reached: the caller
 *   answers `error`
 */
export async function forwardToCoordinator(request: FastifyRequest, reply: FastifyReply, error: OnelogError, timeoutMs: number): Promise<boolean> {
  const url = error.context.coordinatorUrl;
  if (error.code !== 'NOT_COORDINATOR' || typeof url !== 'string') return false;
  if (request.headers[FORWARD_HEADER] !== 'coordinator' || request.headers[FORWARDED_HEADER] !== undefined) return false;
  const headers: Record<string, string> = { [FORWARDED_HEADER]: '1' };
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  let answer: Response;
  try {
    answer = await fetch(new URL(request.url, url), {
      method: request.method, headers, signal: AbortSignal.timeout(timeoutMs),
      ...(request.body === undefined || request.method === 'GET' ? {} : { body: JSON.stringify(request.body) }),
    });
  } catch (err) {
    request.log.warn({ coordinatorUrl: url, err: (err as Error).message }, 'could not forward a request to the group\'s coordinator');
    return false;
  }
  const body = Buffer.from(await answer.arrayBuffer());
  void reply.status(answer.status).header('content-type', answer.headers.get('content-type') ?? 'application/json').send(body);
  return true;
}
