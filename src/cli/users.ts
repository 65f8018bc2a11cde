/**
 * `onelog users ...`: create, list, delete users and rotate their tokens (docs/security.md). A token is printed
 * once, when made; the broker keeps only a salted hash of it.
 */
import type { Command } from 'commander';
import type { CreatedUser } from '../protocol/security.js';
import { action, apiFor, printTable } from './common.js';

function printToken(created: CreatedUser, json: boolean | undefined, what: string): void {
  if (json) console.log(JSON.stringify({ user: created.user, token: created.token }));
  else console.log(`${what} ${created.user}${created.admin ? ' (admin)' : ''}; its token, shown this once:\n${created.token}`);
}

export function registerUsers(program: Command): void {
  const users = program.command('users').description('users and their tokens (the first user is an admin; then every request needs a token)');

  users
    .command('create <name>')
    .description('create a user and print its token once (the first user is an admin; on a broker without users, from its machine)')
    .option('--admin', 'an admin: may manage users')
    .option('--json', 'print { "user", "token" }')
    .action(action(async (name: string, o: { admin?: boolean; json?: boolean }, cmd: Command) => {
      printToken(await apiFor(cmd).createUser(name, o.admin ?? false), o.json, 'created user');
    }));

  users
    .command('list')
    .description('every user (never their tokens)')
    .option('--json', 'print JSON')
    .action(action(async (o: { json?: boolean }, cmd: Command) => {
      const list = await apiFor(cmd).listUsers();
      if (o.json) console.log(JSON.stringify(list));
      else printTable(['USER', 'ADMIN', 'CREATED', 'ROTATED'], list.map((u) => [
        u.user, u.admin ? 'yes' : 'no', new Date(u.createdAt).toISOString(), u.rotatedAt === null ? null : new Date(u.rotatedAt).toISOString(),
      ]));
    }));

  users
    .command('delete <name>')
    .description('delete a user: its token stops working at once')
    .action(action(async (name: string, _o: unknown, cmd: Command) => {
      await apiFor(cmd).deleteUser(name);
      console.log(`deleted user ${name}`);
    }));

  users
    .command('rotate <name>')
    .description('give a user a new token, printed once; the old one stops working at once')
    .option('--json', 'print { "user", "token" }')
    .action(action(async (name: string, o: { json?: boolean }, cmd: Command) => {
      printToken(await apiFor(cmd).rotateUser(name), o.json, 'new token for');
    }));
}
