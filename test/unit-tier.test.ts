import { execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import { describe, expect, it } from 'vitest';

// Runs in the unit project, whose setup (test/helpers/unit-tier.ts) keeps the tier free of processes and services.
describe('the unit tier', () => {
  it('refuses a child process, however it is started', () => {
    expect(() => spawn(process.execPath, ['-e', '0'])).toThrow('the unit tier starts no child process and uses no service, but this test called child_process.spawn');
    expect(() => execFileSync(process.execPath, ['-e', '0'])).toThrow('called child_process.execFileSync');
  });

  it('refuses a connection to PostgreSQL or Redis, and allows other loopback sockets', async () => {
    expect(() => net.connect({ host: '127.0.0.1', port: 5432 })).toThrow('connected to port 5432');
    expect(() => net.connect(6379, '127.0.0.1')).toThrow('connected to port 6379');
    const server = net.createServer((socket) => socket.end()).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.destroy();
    server.close();
  });
});
