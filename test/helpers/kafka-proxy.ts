/** A TCP proxy in front of a Kafka listener that records every request frame clients send through it. */
import net from 'node:net';

export interface RecordingProxy {
  port: number;
  /** Every request frame, without its size prefix, in the order received (over all connections). */
  frames: Buffer[];
  close(): Promise<void>;
}

/** The API key and version of a request frame. */
export function apiOf(frame: Buffer): { apiKey: number; apiVersion: number } {
  return { apiKey: frame.readInt16BE(0), apiVersion: frame.readInt16BE(2) };
}

/**
 * Listens on a free loopback port and forwards each connection to the port `target()` gives at that moment
 * (so the listener may start after the proxy, advertising the proxy's port: then every connection of a client
 * passes through it).
 */
export async function recordingProxy(target: () => number): Promise<RecordingProxy> {
  const frames: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target(), '127.0.0.1');
    sockets.add(client).add(upstream);
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        frames.push(Buffer.from(pending.subarray(4, 4 + pending.readInt32BE(0))));
        pending = pending.subarray(4 + pending.readInt32BE(0));
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
      a.on('close', () => b.destroy());
      a.on('error', () => b.destroy());
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    frames,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
