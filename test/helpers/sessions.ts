/**
 * What a client holds open on a broker, for tests of sessions: a raw Kafka connection authenticated with SASL/PLAIN
 * and a WebSocket (a data socket or a push stream), each answering its next event.
 */
import net from 'node:net';
import WebSocket from 'ws';
import { expect } from 'vitest';

/** A request frame of the Kafka protocol: header v1 (client id `t`), then `body`. */
export function kafkaRequest(apiKey: number, apiVersion: number, correlationId: number, body: Buffer): Buffer {
  const header = Buffer.alloc(11);
  header.writeInt16BE(apiKey, 0);
  header.writeInt16BE(apiVersion, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(1, 8);
  header.write('t', 10);
  const size = Buffer.alloc(4);
  size.writeInt32BE(header.length + body.length, 0);
  return Buffer.concat([size, header, body]);
}

const kafkaString = (text: string) => Buffer.concat([Buffer.from([0, text.length]), Buffer.from(text)]);
/** Metadata v1 of every topic. */
export const METADATA = kafkaRequest(3, 1, 9, Buffer.from('ffffffff', 'hex'));

/**
 * A Kafka connection authenticated with SASL/PLAIN (SaslHandshake v1, SaslAuthenticate v0) as `user` with `token`:
 * `send` answers the response frame to a request, or 'closed' once the broker closed the connection.
 */
export async function kafkaSession(port: number, user: string, token: string): Promise<{ send(frame: Buffer): Promise<Buffer | 'closed'>; closed: Promise<void> }> {
  const socket = net.connect(port, '127.0.0.1');
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  let pending = Buffer.alloc(0);
  const waiting: Array<(answer: Buffer | 'closed') => void> = [];
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
      const size = pending.readInt32BE(0);
      waiting.shift()?.(pending.subarray(4, 4 + size));
      pending = pending.subarray(4 + size);
    }
  });
  void closed.then(() => { for (const w of waiting.splice(0)) w('closed'); });
  const send = (frame: Buffer) => new Promise<Buffer | 'closed'>((resolve) => {
    if (socket.destroyed) return resolve('closed');
    waiting.push(resolve);
    socket.write(frame);
  });
  await new Promise((resolve) => socket.once('connect', resolve));
  const handshake = await send(kafkaRequest(17, 1, 1, kafkaString('PLAIN')));
  expect(handshake !== 'closed' && handshake.readInt16BE(4)).toBe(0); // errorCode after the correlation id
  const plain = Buffer.from(`\u0000${user}\u0000${token}`);
  const length = Buffer.alloc(4);
  length.writeInt32BE(plain.length, 0);
  const authenticated = await send(kafkaRequest(36, 0, 2, Buffer.concat([length, plain])));
  expect(authenticated !== 'closed' && authenticated.readInt16BE(4)).toBe(0);
  return { send, closed };
}

/** A WebSocket to `pathname` as `token`, open; `next` answers its next message, or its close code and reason once it closed. */
export async function openSocket(url: string, pathname: string, token?: string): Promise<{ ws: WebSocket; next(): Promise<{ message: Buffer } | { close: number; reason: string }> }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${pathname}`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  const events: Array<{ message: Buffer } | { close: number; reason: string }> = [];
  const waiting: Array<() => void> = [];
  const push = (event: (typeof events)[number]) => { events.push(event); waiting.shift()?.(); };
  ws.on('message', (data: Buffer) => push({ message: data }));
  ws.on('close', (code, reason) => push({ close: code, reason: reason.toString() }));
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  const next = async () => {
    if (events.length === 0) await new Promise<void>((resolve) => waiting.push(resolve));
    return events.shift()!;
  };
  return { ws, next };
}
