/**
 * Principals (docs/security.md): users with bearer tokens, kept in the catalog and cached here, so a request is
 * authenticated without a catalog read. While no user exists the broker is in protected mode (the Redis idea):
 * only loopback clients are answered, unless the broker was started `--insecure`. The first user is an admin; as
 * soon as one exists every request must carry `Authorization: Bearer TOKEN`, loopback included. Managing users
 * needs an admin (or, in protected mode, a loopback client).
 */
import type { Catalog } from '../catalog/catalog.js';
import type { UserRecord } from '../catalog/users.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import { OnelogError } from '../protocol/errors.js';
import type { CreatedUser, UserSummary } from '../protocol/security.js';
import type { Acls } from './acls.js';
import type { Principal } from './principal.js';
import { newToken, tokenIdOf, tokenMatches } from './tokens.js';
import { parseScramCredential } from './scram.js';
import type { ScramCredential } from './scram.js';
import { serialReloads } from './serial-reloads.js';
import { Sessions } from './sessions.js';


const USER_NAME = /^[A-Za-z0-9._@-]{1,100}$/;

export class Users {
  /** token id -> user */
  private byTokenId = new Map<string, UserRecord>();
  /** The open Kafka connections, data sockets and push streams, ended when their principal no longer holds. */
  readonly sessions = new Sessions();

  private constructor(private readonly catalog: Catalog, private readonly clock: Clock, private readonly logger: Logger,
    private readonly acls: Acls, private readonly insecure: boolean) {}

  /**
   * Loads the users, and from then on follows the changes other brokers sharing the catalog make (cluster mode):
   * at each, users and ACLs are read again, which ends the sessions whose user or token went.
   * @param acls the ACLs, which lose a deleted user's ACLs with it, and are read again with the users
   * @param insecure answer non-loopback clients while no user exists (`serve --insecure`)
   */
  static async open(catalog: Catalog, clock: Clock, logger: Logger, acls: Acls, insecure = false): Promise<Users> {
    const users = new Users(catalog, clock, logger, acls, insecure);
    catalog.onSecurityChange(() => {
      Promise.all([users.reload(), acls.reload()]).catch((err: unknown) => logger.error({ err: (err as Error).message },
        'could not read users and ACLs again after another broker changed them: this broker holds the old ones until the next change or reconnection'));
    });
    await users.reload();
    return users;
  }

  /** Whether any user exists (then every request must authenticate). */
  get any(): boolean {
    return this.byTokenId.size > 0;
  }

  /**
   * Who sends a request with this `Authorization` header from this address.
   * @throws OnelogError `UNAUTHENTICATED` (users exist and the header holds no valid bearer token), `FORBIDDEN`
   *   (protected mode: no user exists and the client is not on loopback)
   */
  authenticate(authorization: string | undefined, remoteAddress: string | undefined): Principal {
    if (!this.any) {
      if (this.insecure || isLoopback(remoteAddress)) return { user: null, admin: true };
      throw new OnelogError('FORBIDDEN', `onelog is in protected mode: no user exists, so it answers loopback clients only; create a user ` +
        `from the broker's machine (onelog users create NAME) and send its token, or start the broker with --insecure`, { reason: 'protected-mode' });
    }
    const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    const user = token === undefined ? undefined : this.byTokenId.get(tokenIdOf(token) ?? '');
    if (token === undefined || user === undefined || !tokenMatches(token, user)) {
      throw new OnelogError('UNAUTHENTICATED', token === undefined
        ? 'this broker has users: send Authorization: Bearer TOKEN (onelog --token TOKEN, or ONELOG_TOKEN)'
        : 'the bearer token is not valid (unknown, deleted or rotated)', {});
    }
    return { user: user.name, admin: user.admin, tokenId: user.tokenId };
  }

  /**
   * SASL/PLAIN on the Kafka listener: the user's name and its token as the password.
   * @throws OnelogError `UNAUTHENTICATED` unless `password` is `user`'s current token
   */
  authenticatePlain(user: string, password: string): Principal {
    const record = this.byTokenId.get(tokenIdOf(password) ?? '');
    if (record === undefined || record.name !== user || !tokenMatches(password, record)) {
      throw new OnelogError('UNAUTHENTICATED', 'SASL/PLAIN authentication failed: wrong user name or password (the password is the user\'s current token)', {});
    }
    return { user: record.name, admin: record.admin, tokenId: record.tokenId };
  }

  /** A user's SCRAM-SHA-256 credential (SASL/SCRAM on the Kafka listener), or undefined (unknown user, or made before SCRAM). */
  scramCredentialOf(user: string): ScramCredential | undefined {
    const record = [...this.byTokenId.values()].find((u) => u.name === user);
    return record?.tokenScram ? parseScramCredential(record.tokenScram) : undefined;
  }

  /**
   * The principal of an existing user, after SCRAM proved it holds the token whose `credential` the exchange began
   * with.
   * @throws OnelogError `UNAUTHENTICATED` for a user deleted, or a token rotated, since the exchange began
   */
  principalOf(user: string, credential: ScramCredential): Principal {
    const record = [...this.byTokenId.values()].find((u) => u.name === user);
    if (record === undefined) throw new OnelogError('UNAUTHENTICATED', `there is no user ${user}`, {});
    if (!record.tokenScram || !parseScramCredential(record.tokenScram).storedKey.equals(credential.storedKey)) {
      throw new OnelogError('UNAUTHENTICATED', `the token of ${user} was rotated during the SCRAM exchange: authenticate again with the new one`, {});
    }
    return { user: record.name, admin: record.admin, tokenId: record.tokenId };
  }

  /**
   * Registers an open connection or stream of `principal` (a Kafka connection after SASL, a data socket, a push
   * stream: what authenticates once, then serves many requests), ended with `end` as soon as the principal no
   * longer holds: its user deleted, its token rotated, or, for protected mode's principal, a first user created;
   * at once if that happened already. Answers the function to call when it closes by itself.
   */
  openSession(principal: Principal, end: (error: OnelogError) => void): () => void {
    const close = this.sessions.add(principal, end);
    this.endLostSessions();
    return close;
  }

  /**
   * Creates a user and its token, shown once. The first user is an admin.
   * @throws OnelogError `FORBIDDEN` unless `by` is an admin, `INVALID_REQUEST` for a bad name, `ALREADY_EXISTS`
   */
  async create(name: string, by: Principal, admin = false): Promise<CreatedUser> {
    this.checkAdmin(by, 'create users');
    if (typeof name !== 'string' || !USER_NAME.test(name)) {
      throw new OnelogError('INVALID_REQUEST', `invalid user name ${JSON.stringify(name)}: use 1 to 100 characters of a-z, A-Z, 0-9, '.', '_', '@' and '-'`, { user: name });
    }
    const { token, stored } = newToken();
    const created = await this.catalog.users.create({ name, admin, ...stored, createdAt: this.clock.now() });
    await this.reload();
    this.logger.info({ user: name, admin: created.admin, by: by.user }, 'user created');
    return { user: name, admin: created.admin, token };
  }

  /** Every user, by name (never their tokens). @throws OnelogError `FORBIDDEN` unless `by` is an admin */
  async list(by: Principal): Promise<UserSummary[]> {
    this.checkAdmin(by, 'list users');
    return (await this.catalog.users.list()).map((u) => ({ user: u.name, admin: u.admin, createdAt: u.createdAt, rotatedAt: u.rotatedAt }));
  }

  /**
   * Deletes a user and its ACLs. The last admin stays: without one nobody could manage users, ACLs or read the audit.
   * @throws OnelogError `FORBIDDEN` unless `by` is an admin, or for the last admin; `NOT_FOUND`
   */
  async delete(name: string, by: Principal): Promise<void> {
    this.checkAdmin(by, 'delete users');
    const admins = [...this.byTokenId.values()].filter((u) => u.admin);
    if (admins.length === 1 && admins[0]!.name === name) {
      throw new OnelogError('FORBIDDEN', `${name} is the last admin: create another admin first (onelog users create NAME --admin)`, { user: name });
    }
    if (!(await this.catalog.users.delete(name))) throw new OnelogError('NOT_FOUND', `there is no user ${name}; onelog users list shows them`, { user: name });
    await Promise.all([this.reload(), this.acls.reload()]);
    this.logger.info({ user: name, by: by.user }, 'user deleted');
  }

  /** Replaces a user's token: the old one stops working at once. @throws OnelogError `FORBIDDEN` unless `by` is an admin or the user, `NOT_FOUND` */
  async rotate(name: string, by: Principal): Promise<CreatedUser> {
    if (by.user !== name) this.checkAdmin(by, 'rotate another user\'s token');
    const { token, stored } = newToken();
    const user = await this.catalog.users.replaceToken(name, stored, this.clock.now());
    if (!user) throw new OnelogError('NOT_FOUND', `there is no user ${name}; onelog users list shows them`, { user: name });
    await this.reload();
    this.logger.info({ user: name, by: by.user }, 'token rotated');
    return { user: name, admin: user.admin, token };
  }

  private checkAdmin(by: Principal, what: string): void {
    if (!by.admin) throw new OnelogError('FORBIDDEN', `only an admin may ${what}; ${by.user} is not one`, { user: by.user });
  }

  /** Re-reads the users, one read at a time (see {@link serialReloads}), and ends the sessions that lost their principal. */
  private readonly reload = serialReloads(async () => {
    this.byTokenId = new Map((await this.catalog.users.list()).map((u) => [u.tokenId, u]));
    this.endLostSessions();
  });

  /** Ends the open sessions whose principal no longer holds (see {@link openSession}). */
  private endLostSessions(): void {
    this.sessions.endWhere((p) => {
      if (p.user === null) {
        return this.any ? new OnelogError('UNAUTHENTICATED', 'a user exists now, so protected mode is over: connect again with a token', { reason: 'protected-mode-ended' }) : undefined;
      }
      const record = p.tokenId === undefined ? [...this.byTokenId.values()].find((u) => u.name === p.user) : this.byTokenId.get(p.tokenId);
      if (record?.name === p.user) return undefined;
      return [...this.byTokenId.values()].some((u) => u.name === p.user)
        ? new OnelogError('UNAUTHENTICATED', `the token of ${p.user} was rotated: connect again with the new one`, { user: p.user, reason: 'token-rotated' })
        : new OnelogError('UNAUTHENTICATED', `user ${p.user} was deleted`, { user: p.user, reason: 'user-deleted' });
    });
  }
}

/** Whether an address is the machine's own (IPv4, IPv6, or IPv4 mapped into IPv6). */
export function isLoopback(address: string | undefined): boolean {
  return address !== undefined && (/^127\./.test(address) || address === '::1' || /^::ffff:127\./.test(address));
}
