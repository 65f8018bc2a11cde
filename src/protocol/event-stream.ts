/**
 * Reads a server-sent event stream (`text/event-stream`, the HTML standard's format) as it arrives in pieces: what
 * `GET /events` sends (docs/monitoring.md, "Console: live"). Read with `fetch` and a reader rather than
 * `EventSource`, which cannot send the bearer token. Pure: no I/O.
 */

/** One event: its `event:` name (`message` when it has none) and its `data:` lines joined by newlines. */
export interface StreamEvent {
  event: string;
  data: string;
}

export class EventStreamParser {
  private buffer = '';
  /** A `\r` that ended the last piece: the first half of a `\r\n`, or a line end of its own. */
  private carriageReturn = false;

  /**
   * Takes the next piece of the stream's text and answers the events it completes, in order (an event ends at a
   * blank line; comment lines, `: ...`, and fields other than `event` and `data` are skipped).
   */
  push(text: string): StreamEvent[] {
    let next = (this.carriageReturn ? '\r' : '') + text;
    // A \r that ends the piece may be the first half of a \r\n: it waits for the next piece.
    this.carriageReturn = next.endsWith('\r');
    if (this.carriageReturn) next = next.slice(0, -1);
    this.buffer += next.replace(/\r\n?/g, '\n');
    const events: StreamEvent[] = [];
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        if (colon === 0) continue; // a comment (a heartbeat)
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length > 0 || event !== 'message') events.push({ event, data: data.join('\n') });
    }
    return events;
  }
}
