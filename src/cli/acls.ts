/**
 * `onelog acls add|list|remove`: who may do what on which topic, group or the cluster (docs/security.md). An ACL
 * names a principal, one resource (`--topic T`, `--group G` or `--cluster`; `--prefix` for every name starting
 * with it), an operation, and allows it unless `--deny`.
 */
import type { Command } from 'commander';
import { ACL_OPERATIONS } from '../protocol/security.js';
import type { AclBinding, AclOperation } from '../protocol/security.js';
import { OnelogError } from '../protocol/errors.js';
import { action, apiFor, printTable } from './common.js';

interface AclFlags {
  principal: string;
  topic?: string;
  group?: string;
  cluster?: boolean;
  prefix?: boolean;
  operation: string;
  deny?: boolean;
}

/** The ACL the flags name. @throws OnelogError `INVALID_REQUEST` unless exactly one resource is named */
function aclOf(o: AclFlags): AclBinding {
  const named = [o.topic !== undefined, o.group !== undefined, o.cluster === true].filter(Boolean).length;
  if (named !== 1) throw new OnelogError('INVALID_REQUEST', 'name one resource: --topic T, --group G or --cluster');
  if (o.cluster && o.prefix) throw new OnelogError('INVALID_REQUEST', '--prefix goes with --topic or --group, not --cluster');
  if (!(ACL_OPERATIONS as readonly string[]).includes(o.operation)) {
    throw new OnelogError('INVALID_REQUEST', `--operation must be one of ${ACL_OPERATIONS.join(', ')}, got ${JSON.stringify(o.operation)}`);
  }
  return {
    principal: o.principal,
    resourceType: o.topic !== undefined ? 'topic' : o.group !== undefined ? 'group' : 'cluster',
    resourceName: o.topic ?? o.group ?? '',
    patternType: o.prefix ? 'prefix' : 'literal',
    operation: o.operation as AclOperation,
    permission: o.deny ? 'deny' : 'allow',
  };
}

function bindingOptions(command: Command): Command {
  return command
    .requiredOption('--principal <user>', 'a user name, or * for every user')
    .option('--topic <topic>', 'a topic (* for every topic)')
    .option('--group <group>', 'a consumer group (* for every group)')
    .option('--cluster', 'the cluster (users, ACLs, alerts, metrics)')
    .option('--prefix', 'every topic or group whose name starts with the one given')
    .requiredOption('--operation <op>', `one of ${ACL_OPERATIONS.join(', ')} (reset: groups only)`)
    .option('--deny', 'deny instead of allow (a deny wins over any allow)');
}

const resourceOf = (a: AclBinding) => a.resourceType === 'cluster' ? 'cluster' : `${a.resourceType}:${a.resourceName}${a.patternType === 'prefix' ? ' (prefix)' : ''}`;

export function registerAcls(program: Command): void {
  const acls = program.command('acls').description('who may do what on which topic, group or the cluster (admins are never refused)');

  bindingOptions(acls.command('add').description('add an ACL'))
    .option('--json', 'print the ACL as stored')
    .action(action(async (o: AclFlags & { json?: boolean }, cmd: Command) => {
      const added = await apiFor(cmd).addAcl(aclOf(o));
      console.log(o.json ? JSON.stringify(added) : `added: ${added.permission} ${added.principal} ${added.operation} on ${resourceOf(added)}`);
    }));

  acls.command('list')
    .description('every ACL, or those of one principal')
    .option('--principal <user>', 'only this principal\'s')
    .option('--json', 'print JSON')
    .action(action(async (o: { principal?: string; json?: boolean }, cmd: Command) => {
      const list = await apiFor(cmd).listAcls(o.principal);
      if (o.json) console.log(JSON.stringify(list));
      else printTable(['PRINCIPAL', 'RESOURCE', 'OPERATION', 'PERMISSION'], list.map((a) => [a.principal, resourceOf(a), a.operation, a.permission]));
    }));

  bindingOptions(acls.command('remove').description('remove an ACL (named exactly as it was added)'))
    .action(action(async (o: AclFlags, cmd: Command) => {
      const acl = aclOf(o);
      await apiFor(cmd).removeAcl(acl);
      console.log(`removed: ${acl.permission} ${acl.principal} ${acl.operation} on ${resourceOf(acl)}`);
    }));
}
