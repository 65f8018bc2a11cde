import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/processes.js';

const unanswered = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/unanswered-connect.mjs');

describe('the CLI', () => {
  it('exits 1, saying so, when its request is left unanswered with nothing to wait for (never 0 having not finished)', async () => {
    const result = await runCli('http://127.0.0.1:7999', ['topics', 'list'], undefined, { NODE_OPTIONS: `--import ${unanswered}` });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('NETWORK_ERROR: the command ended before its work did');
    expect(result.stdout).toBe('');
  });
});
