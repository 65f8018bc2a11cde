/**
 * The layering, checked on the source import graph: the client entry point loads no storage engine and
 * no native module; the storage layer knows nothing of groups, delivery or faces; there are no import cycles.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../src');
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Static imports of a file (type-only imports included: they are erased, but a cycle of them is still a smell). */
function importsOf(file: string, { dynamic }: { dynamic: boolean }): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? (dynamic ? m[2] : undefined);
    if (spec) out.push(spec.startsWith('.') ? path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')) : spec);
  }
  return out;
}

/** Every file and package a module loads at run time, following imports transitively (type imports skipped). */
function runtimeClosure(entry: string): Set<string> {
  const seen = new Set<string>();
  const stack = [entry];
  while (stack.length) {
    const file = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    if (!file.endsWith('.ts')) continue;
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:^|\n)\s*(import|export)\s(?!type\b)[^'"]*?from\s+['"]([^'"]+)['"]/g)) {
      const spec = m[2]!;
      stack.push(spec.startsWith('.') ? path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')) : spec);
    }
  }
  return seen;
}

function allSources(dir = SRC): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? allSources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

describe('architecture', () => {
  // protocol/compression.ts may load (the binary path decodes compressed batches): it loads its native codecs
  // only on first use of each (lazily, not by import), which the package check below keeps honest.
  it('the client entry point loads no storage engine and no native module', () => {
    const closure = [...runtimeClosure(path.join(SRC, 'client/index.ts'))];
    const rel = closure.map((f) => (f.startsWith(SRC) ? path.relative(SRC, f) : f));
    expect(rel).toContain('client/http-api.ts');
    const forbidden = rel.filter((f) =>
      /^(storage|offsets|catalog|coordinator|delivery|server|cli)\/|^broker\.ts$|^(lmdb|better-sqlite3|kysely|fastify|msgpackr|snappy|lz4-napi|@toondepauw)/.test(f),
    );
    expect(forbidden).toEqual([]);
  });

  it('the storage layer imports nothing above it', () => {
    for (const file of allSources(path.join(SRC, 'storage'))) {
      const bad = importsOf(file, { dynamic: true })
        .filter((i) => i.startsWith(SRC))
        .map((i) => path.relative(SRC, i))
        .filter((i) => !/^(storage|protocol)\/|^(clock|logger|buffer-pool)\.ts$/.test(i));
      expect(bad, path.relative(SRC, file)).toEqual([]);
    }
  });

  it('has no import cycles', () => {
    const graph = new Map(allSources().map((f) => [f, importsOf(f, { dynamic: false }).filter((i) => i.startsWith(SRC))]));
    const state = new Map<string, 'visiting' | 'done'>();
    const cycles: string[] = [];
    const visit = (f: string, trail: string[]) => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'visiting') {
        cycles.push([...trail.slice(trail.indexOf(f)), f].map((x) => path.relative(SRC, x)).join(' -> '));
        return;
      }
      state.set(f, 'visiting');
      for (const dep of graph.get(f) ?? []) visit(dep, [...trail, f]);
      state.set(f, 'done');
    };
    for (const f of graph.keys()) visit(f, []);
    expect(cycles).toEqual([]);
  });
});
