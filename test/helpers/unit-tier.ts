/**
 * Setup of the unit tier (vitest project `unit`, `npm run test:unit`): pure code, no services, no child processes.
 * A test of that tier that starts a process or connects to PostgreSQL, Redis, NATS or RabbitMQ fails at once with
 * a line saying so, which keeps the tier's promise true: it belongs in `test:services` (vitest.config.ts).
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

/** The local services' ports: PostgreSQL, Redis, NATS, RabbitMQ. */
const SERVICE_PORTS = new Set([5432, 6379, 4222, 5672]);

const refuse = (what: string) => {
  throw new Error(`the unit tier starts no child process and uses no service, but this test ${what}: list it in the services project (vitest.config.ts)`);
};
for (const name of ['spawn', 'spawnSync', 'fork', 'exec', 'execSync', 'execFile', 'execFileSync'] as const) {
  (childProcess as unknown as Record<string, unknown>)[name] = () => refuse(`called child_process.${name}`);
}
syncBuiltinESMExports();

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]) {
  // net.connect passes its arguments normalized, as one array; a direct socket.connect passes them as they are.
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  const port = typeof first === 'object' && first !== null ? Number((first as { port?: unknown }).port) : Number(first);
  if (SERVICE_PORTS.has(port)) refuse(`connected to port ${port}`);
  return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof net.Socket.prototype.connect;
