/**
 * The open sessions of the broker (docs/security.md): every connection or stream that authenticated once and then
 * serves many requests on that principal (a Kafka connection after SASL, a data socket, a push stream) is registered
 * here, and {@link Users} ends those whose principal no longer holds: its user deleted, its token rotated, or, for
 * protected mode's loopback principal, a first user created. One registry for the three transports, so none keeps
 * rights its principal lost (as Kafka closes a connection whose SASL session expired, KIP-368).
 */
import type { OnelogError } from '../protocol/errors.js';
import type { Principal } from './principal.js';

interface Session {
  principal: Principal;
  end(error: OnelogError): void;
}

export class Sessions {
  private readonly open = new Set<Session>();

  /**
   * Registers a session of `principal`; `end` closes it (given the `UNAUTHENTICATED` error saying why) and is called
   * at most once. Answers the function to call when the session closes by itself (it is then forgotten).
   */
  add(principal: Principal, end: (error: OnelogError) => void): () => void {
    const session = { principal, end };
    this.open.add(session);
    return () => {
      this.open.delete(session);
    };
  }

  /** Ends and forgets every session for whose principal `why` answers an error (undefined: it still holds). */
  endWhere(why: (principal: Principal) => OnelogError | undefined): void {
    for (const session of [...this.open]) {
      const error = why(session.principal);
      if (error === undefined) continue;
      this.open.delete(session);
      session.end(error);
    }
  }

  /** How many are open. */
  get size(): number {
    return this.open.size;
  }
}
