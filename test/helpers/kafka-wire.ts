/**
 * Kafka requests on the wire, for tests that drive the listener below any client: raw frames on one connection, and
 * one request encoded from its message definition (header v1, or v2 in flexible versions; client id "t"), also after a
 * SASL/PLAIN authentication on the same connection.
 */
import net from 'node:net';
import { expect } from 'vitest';
import { ByteReader, ByteWriter } from '../../src/kafka/codec/bytes.js';
import { decode, encode } from '../../src/kafka/codec/interpreter.js';
import type { Struct } from '../../src/kafka/codec/interpreter.js';
import { inRange } from '../../src/kafka/codec/schema.js';
import type { MessageDefinition } from '../../src/kafka/codec/schema.js';
import { saslAuthenticateRequest, saslAuthenticateResponse, saslHandshakeRequest } from '../../src/kafka/messages/sasl.js';

/** Sends raw frames on one connection to `port`; resolves with the response frames (without their size) once `expected` arrived, or at close. */
export function exchange(port: number, frames: Buffer[], expected: number): Promise<{ responses: Buffer[]; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const responses: Buffer[] = [];
    let pending = Buffer.alloc(0);
    socket.on('connect', () => socket.write(Buffer.concat(frames)));
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        responses.push(pending.subarray(4, 4 + pending.readInt32BE(0)));
        pending = pending.subarray(4 + pending.readInt32BE(0));
      }
      if (responses.length === expected) {
        socket.end();
        resolve({ responses, closed: false });
      }
    });
    socket.on('close', () => resolve({ responses, closed: true }));
  });
}

/** A request frame encoded from its definition: header v1 (v2 in flexible versions), client id "t". */
function frame(apiKey: number, version: number, correlationId: number, req: MessageDefinition, value: Struct): Buffer {
  const w = new ByteWriter();
  w.int32(0);
  w.int16(apiKey); w.int16(version); w.int32(correlationId); w.int16(1); w.bytes(Buffer.from('t'));
  if (inRange(req.flexible, version)) w.uvarint(0);
  encode(req, version, value, w);
  const out = Buffer.from(w.finish());
  out.writeInt32BE(out.length - 4, 0);
  return out;
}

/** Decodes an answer to the request `frame` sent with `correlationId`. */
function answer(response: Buffer, apiKey: number, version: number, correlationId: number, res: MessageDefinition): Struct {
  const r = new ByteReader(response);
  expect(r.int32()).toBe(correlationId);
  if (inRange(res.flexible, version) && apiKey !== 18) r.uvarint(); // ApiVersions answers with header v0 at every version
  return decode(res, version, r);
}

/** Sends one request to `port` encoded from its definition and decodes the answer. */
export async function call(port: number, apiKey: number, version: number, req: MessageDefinition, res: MessageDefinition, value: Struct): Promise<Struct> {
  return answer((await exchange(port, [frame(apiKey, version, 77, req, value)], 1)).responses[0]!, apiKey, version, 77, res);
}

/** As {@link call}, on a connection that authenticated first with SASL/PLAIN as `user` with `password` (its token). */
export async function callAs(user: string, password: string, port: number, apiKey: number, version: number, req: MessageDefinition, res: MessageDefinition, value: Struct): Promise<Struct> {
  const frames = [
    frame(17, 1, 1, saslHandshakeRequest, { mechanism: 'PLAIN' }),
    frame(36, 2, 2, saslAuthenticateRequest, { authBytes: Buffer.from(`\0${user}\0${password}`) }),
    frame(apiKey, version, 77, req, value),
  ];
  const { responses } = await exchange(port, frames, 3);
  expect((answer(responses[1]!, 36, 2, 2, saslAuthenticateResponse) as { errorCode: number }).errorCode).toBe(0);
  return answer(responses[2]!, apiKey, version, 77, res);
}
