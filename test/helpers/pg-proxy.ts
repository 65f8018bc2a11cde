/** A loopback TCP proxy to the machine's PostgreSQL that can cut every connection it carries and refuse new ones. */
import net from 'node:net';

export interface PgProxy {
  /** `url` (a PG_URL-based one, on 127.0.0.1:5432) through the proxy. */
  via(url: string): string;
  /** Resets every connection carried so far. */
  resetAll(): void;
  /** While true, a new connection is closed at once. */
  refusing: boolean;
  close(): void;
}

/** Starts a proxy on a free loopback port. */
export async function pgProxy(): Promise<PgProxy> {
  const sockets = new Set<net.Socket>();
  const proxy: PgProxy = {
    via: (url) => url.replace('127.0.0.1:5432', `127.0.0.1:${(server.address() as net.AddressInfo).port}`),
    resetAll: () => {
      for (const s of sockets) s.resetAndDestroy();
      sockets.clear();
    },
    refusing: false,
    close: () => server.close(),
  };
  const server = net.createServer((client) => {
    if (proxy.refusing) return void client.destroy();
    const upstream = net.connect(5432, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
  }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return proxy;
}
