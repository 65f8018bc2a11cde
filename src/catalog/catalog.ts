/**
 * The catalog: the relational store of topics (partition count, retention and cleanup settings), consumer
 * groups and subscriptions (group, topic, delivery mode, start policy), and the rest of the broker's metadata, one
 * repository per aggregate. Low volume, relational queries, integrity by foreign keys. Written against Kysely, so the
 * same code runs on SQLite (embedded default, see {@link openSqliteCatalog}) and PostgreSQL.
 */
import { Kysely, Migrator } from 'kysely';
import type { Dialect, MigrationProvider } from 'kysely';
import { AclRepository } from './acls.js';
import { AlertRepository, AlertSinkRepository } from './alerts.js';
import { AuditRepository } from './audit.js';
import type { AnnouncedChange, CatalogChanges } from './changes.js';
import { CheckpointRepository } from './checkpoints.js';
import { DeadLetterActionRepository } from './dead-letter-actions.js';
import { GroupRepository } from './groups.js';
import { HealthHistoryRepository } from './health-history.js';
import { LogOwnerRepository } from './log-owner.js';
import { migrations } from './migrations.js';
import { OffsetResetRepository } from './offset-resets.js';
import { PauseRepository } from './pauses.js';
import { ProducerIdRepository } from './producer-ids.js';
import type { CatalogSchema } from './schema.js';
import { SubscriptionRepository } from './subscriptions.js';
import { TopicTrafficRepository } from './topic-traffic.js';
import { TopicRepository } from './topics.js';
import { UserRepository } from './users.js';

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** Options of {@link Catalog.open}. */
export interface CatalogOpenOptions {
  /**
   * The schema of Kysely's migration tables (PostgreSQL: the catalog's own schema, or another schema's tables of
   * the same names would be taken for them).
   */
  migrationTableSchema?: string;
  /** The changes feed of a catalog shared by several brokers; closed by {@link Catalog.close}. @default none */
  changes?: CatalogChanges;
}

export class Catalog {
  readonly topics: TopicRepository;
  /** Changes announced to the brokers sharing the catalog ({@link onSecurityChange}). */
  readonly users: UserRepository;
  /** Changes announced to the brokers sharing the catalog ({@link onSecurityChange}). */
  readonly acls: AclRepository;
  readonly audit: AuditRepository;
  readonly groups: GroupRepository;
  readonly subscriptions: SubscriptionRepository;
  readonly pauses: PauseRepository;
  readonly alerts: AlertRepository;
  readonly alertSinks: AlertSinkRepository;
  readonly deadLetterActions: DeadLetterActionRepository;
  readonly offsetResets: OffsetResetRepository;
  readonly checkpoints: CheckpointRepository;
  readonly logOwner: LogOwnerRepository;
  readonly producerIds: ProducerIdRepository;
  /** The health samples the console charts, per group partition and minute (docs/monitoring.md). */
  readonly healthHistory: HealthHistoryRepository;
  /** Records and bytes produced and fetched per topic and minute (docs/monitoring.md). */
  readonly topicTraffic: TopicTrafficRepository;
  private readonly securityListeners: Array<() => void> = [];

  /** Runs a change to users or ACLs in one transaction that also announces it to the other brokers. */
  private readonly changeSecurity: AnnouncedChange = (change) => this.db.transaction().execute(async (tx) => {
    const result = await change(tx);
    await this.changes?.announce(tx);
    return result;
  });

  private constructor(private readonly db: Kysely<CatalogSchema>, private readonly changes: CatalogChanges | undefined) {
    this.topics = new TopicRepository(db);
    this.users = new UserRepository(db, this.changeSecurity);
    this.acls = new AclRepository(db, this.changeSecurity);
    this.audit = new AuditRepository(db);
    this.groups = new GroupRepository(db);
    this.subscriptions = new SubscriptionRepository(db);
    this.pauses = new PauseRepository(db);
    this.alerts = new AlertRepository(db);
    this.alertSinks = new AlertSinkRepository(db);
    this.deadLetterActions = new DeadLetterActionRepository(db);
    this.offsetResets = new OffsetResetRepository(db);
    this.checkpoints = new CheckpointRepository(db);
    this.logOwner = new LogOwnerRepository(db);
    this.producerIds = new ProducerIdRepository(db);
    this.healthHistory = new HealthHistoryRepository(db);
    this.topicTraffic = new TopicTrafficRepository(db);
  }

  /**
   * Opens the catalog over a Kysely dialect, applies pending migrations and starts hearing `options.changes`.
   * @throws Error if a migration fails (the catalog is left at the last applied migration), or what the changes
   *   feed's `listen` throws
   */
  static async open(dialect: Dialect, options: CatalogOpenOptions = {}): Promise<Catalog> {
    const db = new Kysely<CatalogSchema>({ dialect });
    const { migrationTableSchema, changes } = options;
    const { error } = await new Migrator({ db, provider, ...(migrationTableSchema === undefined ? {} : { migrationTableSchema }) }).migrateToLatest();
    if (error) {
      await db.destroy();
      throw error instanceof Error ? error : new Error(String(error));
    }
    const catalog = new Catalog(db, changes);
    try {
      await changes?.listen(() => {
        for (const listener of catalog.securityListeners) listener();
      });
    } catch (err) {
      await db.destroy();
      throw err;
    }
    return catalog;
  }

  /**
   * Calls `listener` whenever users or ACLs may have been changed by another broker sharing this catalog (each
   * change made through any broker, this one's included, and after hearing was interrupted). Never called on the
   * embedded catalog, which no other broker changes.
   */
  onSecurityChange(listener: () => void): void {
    this.securityListeners.push(listener);
  }

  async close(): Promise<void> {
    await this.changes?.close();
    await this.db.destroy();
  }
}
