/** Who a request comes from: a user, or (protected mode, no user exists) the loopback client, an admin. */
export type Principal = { user: string; admin: boolean } | { user: null; admin: true };
