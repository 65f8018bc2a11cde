/** `onelog audit list`: who did, or was refused, which offset, data or user operation (docs/security.md; admins only). */
import type { Command } from 'commander';
import { action, apiFor, parseInteger, printTable } from './common.js';

export function registerAudit(program: Command): void {
  program.command('audit').description('who did which offset, data or user operation')
    .command('list')
    .description('audited operations, newest first: executed resets, redrives and purges, delete-records, topic and group deletions, user and ACL changes; and refused attempts at any operation that changes something')
    .option('--limit <n>', 'at most this many (1 to 10000, default 100)', parseInteger('--limit', 1, 10_000))
    .option('--json', 'print JSON')
    .action(action(async (o: { limit?: number; json?: boolean }, cmd: Command) => {
      const entries = await apiFor(cmd).listAudit(o.limit);
      if (o.json) console.log(JSON.stringify(entries));
      else printTable(['ID', 'AT', 'PRINCIPAL', 'ACTION', 'TARGET', 'OUTCOME', 'DETAILS'], entries.map((e) => [
        e.id, new Date(e.at).toISOString(), e.principal, e.action, e.target, e.outcome, JSON.stringify(e.details),
      ]));
    }));
}
