/** The guard of handlers outside fastify's request lifecycle: a throw becomes a typed answer and a log line, never an uncaught exception. */
import { describe, expect, it } from 'vitest';
import { asOnelogError, guarded } from '../../src/common/guard.js';
import type { Logger } from '../../src/common/logger.js';
import { OnelogError } from '../../src/protocol/errors.js';

function recordingLogger(): Logger & { lines: Array<{ level: string; obj: object; msg: string }> } {
  const lines: Array<{ level: string; obj: object; msg: string }> = [];
  const at = (level: string) => (obj: object, msg: string) => lines.push({ level, obj, msg });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

describe('guarded', () => {
  it('answers a synchronous throw and a rejection with the typed error and logs it: warn for 4xx, error for 5xx', async () => {
    const logger = recordingLogger();
    const answers: Array<[string, string]> = [];
    const options = { what: 'upgrade refused', logger, fields: (path: string) => ({ path }), answer: (e: OnelogError, path: string) => answers.push([e.code, path]) };
    const sync = guarded((path: string) => {
      throw new OnelogError('INVALID_REQUEST', `bad path ${path}`, { at: 1 });
    }, options);
    expect(sync('/a')).toBeUndefined();
    const rejecting = guarded(async (path: string) => {
      throw new TypeError(`broken on ${path}`);
    }, options);
    await rejecting('/b');
    expect(answers).toEqual([['INVALID_REQUEST', '/a'], ['INTERNAL_ERROR', '/b']]);
    expect(logger.lines.map(({ level, obj, msg }) => ({ level, msg, code: (obj as { code: string }).code, path: (obj as { path: string }).path })))
      .toEqual([
        { level: 'warn', msg: 'upgrade refused: bad path /a', code: 'INVALID_REQUEST', path: '/a' },
        { level: 'error', msg: 'upgrade refused: broken on /b', code: 'INTERNAL_ERROR', path: '/b' },
      ]);
    expect((logger.lines[0]!.obj as { at: number }).at).toBe(1);
  });

  it('lets the handler\'s result through, and an answer that throws is logged, not thrown', async () => {
    const logger = recordingLogger();
    const answerThrows = { what: 'frame', logger, answer: () => { throw new Error('socket gone'); } };
    let ran = 0;
    await guarded(async () => { ran++; }, answerThrows)();
    expect([ran, logger.lines]).toEqual([1, []]);
    expect(() => guarded(() => { throw new OnelogError('INVALID_REQUEST', 'no'); }, answerThrows)()).not.toThrow();
    await expect(guarded(() => Promise.reject(null), answerThrows)()).resolves.toBeUndefined();
    expect(logger.lines.map((l) => l.msg)).toEqual(['frame: no', 'frame: could not answer INVALID_REQUEST', 'frame: a handler threw object', 'frame: could not answer INTERNAL_ERROR']);
  });
});

describe('asOnelogError', () => {
  it('keeps an OnelogError, types a parse failure INVALID_REQUEST, a full disk RESOURCE_EXHAUSTED, anything else INTERNAL_ERROR', () => {
    const typed = new OnelogError('NOT_FOUND', 'gone');
    expect(asOnelogError(typed)).toBe(typed);
    let uriError: unknown;
    try {
      decodeURIComponent('%E0%A4%A');
    } catch (err) {
      uriError = err;
    }
    expect(asOnelogError(uriError).code).toBe('INVALID_REQUEST');
    expect(asOnelogError(new SyntaxError('Unexpected token')).code).toBe('INVALID_REQUEST');
    expect(asOnelogError(Object.assign(new Error('no space'), { code: 'ENOSPC' })).context.resource).toBe('disk');
    expect(asOnelogError(new RangeError('x')).code).toBe('INTERNAL_ERROR');
    expect(asOnelogError(undefined).code).toBe('INTERNAL_ERROR');
  });
});
