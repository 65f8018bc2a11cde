import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERRORS, OnelogError } from '../../src/protocol/errors.js';

const doc = fs.readFileSync(path.resolve(import.meta.dirname, '../../docs/errors.md'), 'utf8');

describe('error registry', () => {
  it('is documented in docs/errors.md, entry for entry', () => {
    const documented = [...doc.matchAll(/^## ([A-Z_]+)\nHTTP (\d+), wire (-?\d+), retriable: (yes|no)\./gm)].map((m) => ({
      code: m[1]!, httpStatus: Number(m[2]), wireCode: Number(m[3]), retriable: m[4] === 'yes',
    }));
    const registry = Object.entries(ERRORS).map(([code, spec]) => ({ code, ...spec }));
    expect(documented.sort((a, b) => a.code.localeCompare(b.code))).toEqual(
      registry.sort((a, b) => a.code.localeCompare(b.code)),
    );
  });

  it('has unique wire codes', () => {
    const wire = Object.values(ERRORS).map((e) => e.wireCode);
    expect(new Set(wire).size).toBe(wire.length);
  });

  it('round-trips through its wire body, context included', () => {
    const e = new OnelogError('OFFSET_OUT_OF_RANGE', 'behind', { groupId: 'g', partition: 2 });
    const back = OnelogError.fromJSON(JSON.parse(JSON.stringify(e)));
    expect(back).toMatchObject({ code: 'OFFSET_OUT_OF_RANGE', message: 'behind', context: { groupId: 'g', partition: 2 } });
    expect(back.retriable).toBe(false);
    expect(OnelogError.fromJSON({ code: 'SOMETHING_NEW', message: 'x' })).toMatchObject({
      code: 'INTERNAL_ERROR', context: { remoteCode: 'SOMETHING_NEW' },
    });
  });
});
