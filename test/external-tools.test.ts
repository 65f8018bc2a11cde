import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasTool } from './helpers/tools.js';
import { tmpDir } from './helpers/tmp.js';

describe('tests that need a tool from outside npm', () => {
  const bin = tmpDir();
  fs.writeFileSync(path.join(bin, 'fake-tool'), '#!/bin/sh\n', { mode: 0o755 });
  fs.writeFileSync(path.join(bin, 'not-executable'), '', { mode: 0o644 });
  const tool = (command: string) => ({ name: 'Fake', command, install: 'apt-get install fake' });

  it('run when the tool is on PATH or at its path', () => {
    const lines: string[] = [];
    expect(hasTool(tool('fake-tool'), 'a test', { PATH: `/nonexistent${path.delimiter}${bin}` }, (l) => lines.push(l))).toBe(true);
    expect(hasTool(tool(path.join(bin, 'fake-tool')), 'a test', { PATH: '' }, (l) => lines.push(l))).toBe(true);
    expect(lines).toEqual([]);
  });

  it('are skipped with one line naming the tool and its install command when it is missing or not executable', () => {
    const lines: string[] = [];
    expect(hasTool(tool('fake-tool'), 'the fake suite', { PATH: '/nonexistent' }, (l) => lines.push(l))).toBe(false);
    expect(hasTool(tool('not-executable'), 'the fake suite', { PATH: bin }, (l) => lines.push(l))).toBe(false);
    expect(lines).toEqual([
      'skipped: the fake suite needs Fake (not installed): apt-get install fake',
      'skipped: the fake suite needs Fake (not installed): apt-get install fake',
    ]);
  });

  it('fail at once under CI=true when the tool is missing: CI never skips', () => {
    expect(() => hasTool(tool('fake-tool'), 'the fake suite', { PATH: '/nonexistent', CI: 'true' }, () => undefined))
      .toThrow('the fake suite needs Fake (fake-tool), which is not installed; CI=true never skips: apt-get install fake');
  });
});
