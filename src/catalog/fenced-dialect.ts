/**
 * A Kysely dialect whose writes run through the broker's {@link WriteFence}: every statement but a SELECT (and
 * a ROLLBACK, which only undoes) is refused once writes stopped, and a statement that fails for a reason of the
 * disk under the database stops them (see write-fence.ts). Errors of the request itself (a constraint, a bad
 * value) pass through unchanged.
 */
import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult } from 'kysely';
import type { WriteFence } from '../common/write-fence.js';

/** Says whether a failed statement's error is a failure of the database's storage. */
export type StoreFailureTest = (err: unknown) => boolean;

/** SQLite's result codes of a sick disk or file (https://sqlite.org/rescode.html); SQLITE_FULL is a full disk. */
export function isSqliteStorageFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(SQLITE_(IOERR|CORRUPT|NOTADB|CANTOPEN|READONLY)|EIO$)/.test(code);
}

function isWrite(query: CompiledQuery): boolean {
  return query.query.kind !== 'SelectQueryNode' && !/^\s*rollback\b/i.test(query.sql);
}

/** `dialect` with its statements fenced as the file's comment says. */
export function fencedDialect(dialect: Dialect, fence: WriteFence, isFailure: StoreFailureTest): Dialect {
  return wrappedDialect(dialect, (connection) => ({
    executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      if (!isWrite(query)) return connection.executeQuery<R>(query);
      return fence.guard('catalog', 'write', isFailure, () => connection.executeQuery<R>(query));
    },
    streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
  }));
}

/**
 * `dialect` with each connection's statements run through `wrap` (BEGIN and COMMIT too: the driver runs them on
 * the wrapped connection it is given).
 */
export function wrappedDialect(dialect: Dialect, wrap: (connection: DatabaseConnection) => DatabaseConnection): Dialect {
  return {
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createDriver: (): Driver => {
      const driver = dialect.createDriver();
      const wrapped = new WeakMap<DatabaseConnection, DatabaseConnection>();
      const inner = new WeakMap<DatabaseConnection, DatabaseConnection>();
      const unwrap = (c: DatabaseConnection): DatabaseConnection => inner.get(c) ?? c;
      return {
        init: () => driver.init(),
        acquireConnection: async () => {
          const connection = await driver.acquireConnection();
          let outer = wrapped.get(connection);
          if (outer === undefined) {
            outer = wrap(connection);
            wrapped.set(connection, outer);
            inner.set(outer, connection);
          }
          return outer;
        },
        beginTransaction: (c, settings) => driver.beginTransaction(c, settings),
        commitTransaction: (c) => driver.commitTransaction(c),
        rollbackTransaction: (c) => driver.rollbackTransaction(c),
        releaseConnection: (c) => driver.releaseConnection(unwrap(c)),
        destroy: () => driver.destroy(),
      };
    },
  };
}
