/** The server-sent event reader (src/protocol/event-stream.ts): events whole whatever pieces the stream arrives in. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventStreamParser } from '../../src/protocol/event-stream.js';

const STREAM = 'event: ready\ndata: {}\n\n: heartbeat\n\nevent: changes\ndata: {"changes":[1]}\n\ndata: first\r\ndata: second\r\n\r\nid: 7\nretry: 10\n\n';
const EVENTS = [{ event: 'ready', data: '{}' }, { event: 'changes', data: '{"changes":[1]}' }, { event: 'message', data: 'first\nsecond' }];

describe('EventStreamParser', () => {
  it('reads named events, joins data lines, skips comments and other fields, takes CRLF', () => {
    expect(new EventStreamParser().push(STREAM)).toEqual(EVENTS);
  });

  it('answers the same events however the text is cut into pieces', () => {
    fc.assert(fc.property(fc.uniqueArray(fc.integer({ min: 1, max: STREAM.length - 1 }), { maxLength: 12 }), (cuts) => {
      const parser = new EventStreamParser();
      const bounds = [0, ...cuts.sort((a, b) => a - b), STREAM.length];
      const events = bounds.slice(1).flatMap((end, i) => parser.push(STREAM.slice(bounds[i], end)));
      expect(events).toEqual(EVENTS);
    }));
  });
});
