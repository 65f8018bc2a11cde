/**
 * The layering, checked on the source import graph: every folder of src/ imports only the folders below it, as the
 * table {@link LAYERS} declares (no exception listed); inside log/, the root imports neither engine and the engines
 * ({@link LOG_ENGINES}) do not import each other; the client entry point loads no storage engine and no native
 * module; there are no import cycles, between files or between folders.
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

/**
 * The folders of src/, bottom up, and the folders each may import (docs/architecture.md draws the same map). A
 * folder's own files import each other freely.
 */
const LAYERS: Record<string, readonly string[]> = {
  protocol: [], // the wire: record batches, the error registry, API types, validation
  common: ['protocol'], // clock, logger, backoff, buffer pool, guard, file modes, resource errors, PostgreSQL pools, the write fence
  catalog: ['common', 'protocol'],
  offsets: ['common', 'protocol'],
  cluster: ['common', 'protocol'], // brokers, leases, group leases: who does what in a cluster
  log: ['common', 'protocol', 'catalog', 'cluster'], // the log: its interface and rules; engines in segments/ and objects/
  member: ['common', 'protocol'], // the group member and consumer loop every kind of member shares
  client: ['common', 'protocol', 'member'],
  security: ['common', 'protocol', 'catalog'],
  monitoring: ['common', 'protocol', 'log', 'catalog', 'offsets', 'security'],
  coordinator: ['common', 'protocol', 'log', 'catalog', 'offsets', 'cluster', 'monitoring'],
  delivery: ['common', 'protocol', 'log', 'catalog', 'offsets', 'coordinator', 'monitoring', 'security', 'member'],
  broker: ['common', 'protocol', 'log', 'catalog', 'offsets', 'cluster', 'coordinator', 'delivery', 'monitoring', 'security'],
  server: ['common', 'protocol', 'security', 'delivery', 'monitoring'], // the HTTP face
  kafka: ['common', 'protocol', 'security'], // the Kafka face
  cli: ['common', 'protocol', 'log', 'member', 'client', 'security', 'broker', 'server', 'kafka'], // `serve` loads the broker and the faces lazily
};

/**
 * The engines under src/log/, each in its folder: each imports the log's root (the interface and the rules both
 * follow) and never the other; the root imports no engine.
 */
const LOG_ENGINES = ['segments', 'objects'] as const;

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
      /^(log|offsets|catalog|cluster|coordinator|delivery|monitoring|server|kafka|cli|broker)\/|^(lmdb|better-sqlite3|kysely|fastify|msgpackr|snappy|lz4-napi|@toondepauw)/.test(f),
    );
    expect(forbidden).toEqual([]);
  });

  it('every folder imports only the folders its layer allows (type and lazy imports included)', () => {
    const folders = fs.readdirSync(SRC, { withFileTypes: true });
    expect(folders.filter((e) => !e.isDirectory()).map((e) => e.name), 'modules at the top of src/').toEqual([]);
    expect(folders.map((e) => e.name).sort()).toEqual(Object.keys(LAYERS).sort());
    const wrong: string[] = [];
    for (const file of allSources()) {
      const from = path.relative(SRC, file).split(path.sep)[0]!;
      for (const target of importsOf(file, { dynamic: true }).filter((i) => i.startsWith(SRC))) {
        const to = path.relative(SRC, target).split(path.sep)[0]!;
        if (to !== from && !LAYERS[from]!.includes(to)) wrong.push(`${path.relative(SRC, file)} -> ${path.relative(SRC, target)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('the log\'s root imports neither engine, and its engines do not import each other', () => {
    const log = path.join(SRC, 'log');
    const engines = fs.readdirSync(log, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(engines.sort()).toEqual([...LOG_ENGINES].sort());
    /** `root` for the log's own files, else the engine folder a file lies in. */
    const part = (file: string) => {
      const rel = path.relative(log, file).split(path.sep);
      return rel.length === 1 ? 'root' : rel[0]!;
    };
    const wrong: string[] = [];
    for (const file of allSources(log)) {
      for (const target of importsOf(file, { dynamic: true }).filter((i) => i.startsWith(log + path.sep))) {
        const [from, to] = [part(file), part(target)];
        if (to !== from && to !== 'root') wrong.push(`${path.relative(SRC, file)} -> ${path.relative(SRC, target)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('declares layers that form no cycle', () => {
    const order: string[] = [];
    const place = (folder: string, trail: string[]): void => {
      expect(trail, `${[...trail, folder].join(' -> ')}`).not.toContain(folder);
      if (order.includes(folder)) return;
      for (const below of LAYERS[folder]!) place(below, [...trail, folder]);
      order.push(folder);
    };
    for (const folder of Object.keys(LAYERS)) place(folder, []);
    expect(order).toHaveLength(Object.keys(LAYERS).length);
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
