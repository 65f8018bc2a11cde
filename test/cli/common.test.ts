/** The CLI's error output: every URL's credentials cut out, wherever a message or its context quotes one. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reportError } from '../../src/cli/common.js';
import { OnelogError } from '../../src/protocol/errors.js';

afterEach(() => {
  vi.restoreAllMocks();
});

function printed(err: unknown): string {
  const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  reportError(err);
  return write.mock.calls.map(([text]) => String(text)).join('');
}

describe('reportError', () => {
  it('cuts the password of every URL out of the message, the context and the stack, not only the first', () => {
    const quoted = 'cannot reach http://***@db:5432/x: Request cannot be constructed from a URL that includes credentials: ' +
      'http://admin:hunter2@db:5432/x/topics; also redis://:hunter2@cache:6379/0 and http://db/?user=a&password=hunter2';
    const outputs = [
      printed(new OnelogError('NETWORK_ERROR', quoted, { url: 'http://admin:hunter2@db:5432/x', urls: ['https://u:hunter2@h'] })),
      printed(Object.assign(new TypeError(quoted), { code: 'ERR_INVALID_URL' })),
      printed(new Error(quoted)),
    ];
    for (const output of outputs) {
      expect(output).not.toContain('hunter2');
      expect(output).toContain('http://***@db:5432/x/topics');
    }
    expect(outputs[0]).toContain('"url":"http://***@db:5432/x"');
    expect(outputs[0]).toContain('password=***');
  });
});
