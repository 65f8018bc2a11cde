/**
 * Who a request comes from: a user (with the id of the token it authenticated with, when it did: what ends its open
 * sessions once that token is rotated), or (protected mode, no user exists) the loopback client, an admin.
 */
export type Principal = { user: string; admin: boolean; tokenId?: string } | { user: null; admin: true };

/** The name audit entries and quotas give a principal: the user, or `anonymous`. */
export function principalName(p: Principal): string {
  return p.user ?? 'anonymous';
}

/** Protected mode's principal (no user exists, a loopback client), and what a server that checks no one answers everyone as. */
export const LOOPBACK_ADMIN: Principal = { user: null, admin: true };
