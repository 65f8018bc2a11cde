/**
 * The one guard of every handler that runs outside fastify's request lifecycle: WebSocket upgrades, the `data` and
 * `message` handlers of the push streams, the data sockets and the Kafka listener, and timers. Such a handler is
 * called by an event emitter or a timer, where a throw (or a rejected promise) is an uncaught exception that ends
 * the process: one hostile request would stop the broker. Wrapped in {@link guarded}, a throw becomes a typed
 * error ({@link asOnelogError}), is logged (warn for the client's fault, error for the broker's) and answered the
 * way the handler's protocol answers (an HTTP error response, an error frame, a closed connection); the process
 * goes on.
 */
import type { Logger } from './logger.js';
import { OnelogError } from '../protocol/errors.js';
import { resourceExhausted } from './resource-exhausted.js';

/**
 * The registry error for anything thrown: an OnelogError as it is; running out of disk, descriptors or memory
 * `RESOURCE_EXHAUSTED`; a parse failure (`SyntaxError` from JSON, `URIError` from a percent-escape)
 * `INVALID_REQUEST`; anything else `INTERNAL_ERROR` (a bug: something threw that should have been typed).
 */
export function asOnelogError(err: unknown): OnelogError {
  if (err instanceof OnelogError) return err;
  const exhausted = resourceExhausted(err, 'the request');
  if (exhausted !== undefined) return exhausted;
  if (err instanceof SyntaxError || err instanceof URIError) return new OnelogError('INVALID_REQUEST', `malformed request: ${err.message}`);
  return new OnelogError('INTERNAL_ERROR', err instanceof Error ? err.message : `a handler threw ${typeof err}`);
}

/** How a guarded handler reports and answers a throw. */
export interface GuardOptions<A extends unknown[]> {
  /** Names the handler in the log line: `${what}: ${error.message}`. */
  what: string;
  logger: Logger;
  /** Fields added to the log line, from the handler's arguments (the peer's address). @default none */
  fields?: (...args: A) => object;
  /**
   * Tells the peer, as the handler's protocol does: an HTTP error response on an upgrade's socket, an error frame,
   * a closed connection. Called with the typed error and the handler's arguments; a throw of its own is logged and
   * dropped.
   */
  answer: (error: OnelogError, ...args: A) => void;
}

/**
 * `handler`, made unable to end the process: a synchronous throw or a rejection of the promise it returns is
 * turned into a registry error ({@link asOnelogError}), logged (at warn for a 4xx error, at error with the stack
 * for a 5xx one) and answered with `options.answer`. The wrapper returns a promise that never rejects when the
 * handler returns one (to chain or await it), else nothing.
 */
export function guarded<A extends unknown[]>(handler: (...args: A) => unknown, options: GuardOptions<A>): (...args: A) => Promise<void> | undefined {
  const fail = (err: unknown, args: A): void => {
    const error = asOnelogError(err);
    const fields = options.fields?.(...args);
    const line = { ...fields, code: error.code, ...error.context };
    if (error.httpStatus >= 500) options.logger.error({ ...line, stack: (err as Error | null)?.stack }, `${options.what}: ${error.message}`);
    else options.logger.warn(line, `${options.what}: ${error.message}`);
    try {
      options.answer(error, ...args);
    } catch (answerErr) {
      options.logger.warn({ ...fields, err: (answerErr as Error | null)?.message }, `${options.what}: could not answer ${error.code}`);
    }
  };
  return (...args: A) => {
    try {
      const result = handler(...args);
      if (result instanceof Promise) return result.then(() => undefined, (err: unknown) => fail(err, args));
    } catch (err) {
      fail(err, args);
    }
    return undefined;
  };
}
