/**
 * The `onelog` command line's commands. Every command but `serve` talks to a server: `--server URL`, else env
 * `ONELOG_URL`, else `http://127.0.0.1:7070`; several URLs, separated by commas, fail over (client/http-api.ts).
 */
import fs from 'node:fs';
import { Command } from 'commander';
import { registerAcls } from './acls.js';
import { registerAlerts } from './alerts.js';
import { registerAudit } from './audit.js';
import { registerCluster } from './cluster.js';
import { registerConsume } from './consume.js';
import { registerDlq } from './dlq.js';
import { registerGroups } from './groups.js';
import { registerOffsets } from './offsets.js';
import { registerProduce } from './produce.js';
import { registerServe } from './serve.js';
import { registerTopics } from './topics.js';
import { registerUsers } from './users.js';

/** Every command, not yet parsed (`program.parseAsync(argv)`). */
export function buildProgram(): Command {
  const program = new Command('onelog')
    .description('onelog: a durable, log-based publish/subscribe broker. One log, many cursors.')
    .version((JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version)
    .option('--server <url>', 'onelog server address; several, separated by commas, fail over (default: env ONELOG_URL, else http://127.0.0.1:7070)')
    .option('--token <token>', 'a user\'s token, once the broker has users (default: env ONELOG_TOKEN; docs/security.md)')
    .option('--ca <file>', 'the CA certificate (PEM) that signed an https:// server\'s certificate (default: env ONELOG_CA)')
    .option('--cert <file>', 'a client certificate (PEM), for a server started with --tls-ca (default: env ONELOG_CERT)')
    .option('--key <file>', 'the client certificate\'s key (PEM) (default: env ONELOG_KEY)')
    .showHelpAfterError();
  registerServe(program);
  registerTopics(program);
  registerProduce(program);
  registerConsume(program);
  registerGroups(program);
  registerOffsets(program);
  registerDlq(program);
  registerAlerts(program);
  registerUsers(program);
  registerAcls(program);
  registerAudit(program);
  registerCluster(program);
  return program;
}
