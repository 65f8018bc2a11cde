/**
 * `npm run chaos -- --cycles N [--seed S] [--stop-every K] [--keep-data]`: the crash loop (test/chaos/chaos.ts).
 * Prints each anomaly with its operations, then `N cycles, A anomalies, R acknowledged records`; exits 1 on any
 * anomaly. Needs the build (the npm script runs it) and PostgreSQL (env `ONELOG_TEST_PG`, default
 * postgres://postgres@127.0.0.1:5432/test).
 */
import { parseArgs } from 'node:util';
import { runChaos } from './chaos.js';

const { values } = parseArgs({
  options: {
    cycles: { type: 'string', default: '20' },
    seed: { type: 'string' },
    'stop-every': { type: 'string', default: '5' },
    'keep-data': { type: 'boolean', default: false },
  },
});
const positive = (name: string, text: string) => {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be an integer >= 1, got ${JSON.stringify(text)}`);
  return n;
};

const result = await runChaos({
  cycles: positive('cycles', values.cycles),
  ...(values.seed !== undefined ? { seed: Number(values.seed) } : {}),
  stopEvery: positive('stop-every', values['stop-every']),
  keepData: values['keep-data'],
  log: (line) => console.log(line),
});
for (const anomaly of result.anomalies) {
  console.log(`\n${anomaly.kind}: ${anomaly.message}`);
  for (const op of anomaly.operations) {
    const records = 'records' in op && op.records.length > 10 ? { records: `${op.records.length} records, ${op.records[0]!.offset}..${op.records.at(-1)!.offset}` } : {};
    console.log(`  ${JSON.stringify({ ...op, ...records })}`);
  }
}
console.log(`operations: ${Object.entries(result.operations).sort().map(([name, n]) => `${name} ${n}`).join(', ')}`);
console.log(`${result.cycles} cycles, ${result.anomalies.length} anomalies, ${result.acknowledged} acknowledged records`);
process.exit(result.anomalies.length > 0 ? 1 : 0);
