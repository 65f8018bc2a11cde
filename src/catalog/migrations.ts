/**
 * Catalog migrations, in order. Written with Kysely's schema builder so the same steps run on SQLite and
 * PostgreSQL; where the two differ (an auto-incremented id, collations) a step asks {@link isPostgres}.
 * Never change what a released migration does on an engine it ran on: add the next one.
 */
import { PostgresAdapter, sql } from 'kysely';
import type { ColumnDefinitionBuilder, CreateTableBuilder, Kysely, Migration } from 'kysely';

/** Whether the migration runs on PostgreSQL (else SQLite). */
function isPostgres(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * Adds an auto-incremented integer primary key: SQLite's `integer primary key autoincrement` (ids never reused),
 * PostgreSQL's `serial primary key` (a sequence, never reused either).
 */
function serialId(db: Kysely<unknown>, column: string) {
  return <T extends string, C extends string>(table: CreateTableBuilder<T, C>): CreateTableBuilder<T, C> =>
    isPostgres(db) ? table.addColumn(column, 'serial', (c) => c.primaryKey()) : table.addColumn(column, 'integer', (c) => c.primaryKey().autoIncrement());
}

export const migrations: Record<string, Migration> = {
  '0001-topics-groups-subscriptions': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('topics')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('partitions', 'integer', (c) => c.notNull().check(sql.raw('partitions >= 1')))
        .addColumn('cleanup_policy', 'text', (c) => c.notNull())
        .addColumn('retention_ms', 'bigint', (c) => c.notNull())
        .addColumn('retention_bytes', 'bigint', (c) => c.notNull())
        .addColumn('segment_bytes', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('groups')
        .addColumn('group_id', 'text', (c) => c.primaryKey())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('subscriptions')
        .addColumn('group_id', 'text', (c) => c.notNull().references('groups.group_id').onDelete('cascade'))
        .addColumn('topic', 'text', (c) => c.notNull().references('topics.name').onDelete('cascade'))
        .addColumn('delivery_mode', 'text', (c) => c.notNull().check(sql.raw("delivery_mode in ('pull', 'push')")))
        .addColumn('start_policy', 'text', (c) => c.notNull().check(sql.raw("start_policy in ('earliest', 'latest')")))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('subscriptions_pk', ['group_id', 'topic'])
        .execute();
      await db.schema.createIndex('subscriptions_by_topic').on('subscriptions').column('topic').execute();
    },
  },
  '0002-topic-settings': {
    // Defaults here are the values of the day, frozen with the migration.
    async up(db: Kysely<unknown>): Promise<void> {
      const columns: Array<[string, 'bigint' | 'text', number | string]> = [
        ['segment_ms', 'bigint', 604800000],
        ['delete_retention_ms', 'bigint', 86400000],
        ['min_compaction_lag_ms', 'bigint', 0],
        ['flush_policy', 'text', 'interval'],
        ['flush_ms', 'bigint', 50],
        ['flush_messages', 'bigint', -1],
        ['compression_type', 'text', 'producer'],
      ];
      for (const [name, type, value] of columns) {
        await db.schema.alterTable('topics').addColumn(name, type, (c) => c.notNull().defaultTo(value)).execute();
      }
    },
  },
  '0003-group-operations': {
    // Pauses, alerts, reset history and checkpoints of consumer groups; producer ids.
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable('subscriptions')
        .addColumn('on_out_of_range', 'text', (c) => c.notNull().defaultTo('pause').check(sql.raw("on_out_of_range in ('pause', 'earliest', 'latest')")))
        .execute();
      const groupId = (c: ColumnDefinitionBuilder) => c.notNull().references('groups.group_id').onDelete('cascade');
      await db.schema
        .createTable('paused_partitions')
        .addColumn('group_id', 'text', groupId)
        .addColumn('topic', 'text', (c) => c.notNull())
        .addColumn('partition', 'integer', (c) => c.notNull())
        .addColumn('error', 'text', (c) => c.notNull())
        .addColumn('paused_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('paused_partitions_pk', ['group_id', 'topic', 'partition'])
        .execute();
      await db.schema
        .createTable('group_alerts')
        .$call(serialId(db, 'id'))
        .addColumn('group_id', 'text', groupId)
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('topic', 'text', (c) => c.notNull())
        .addColumn('partition', 'integer', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('context', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('group_alerts_by_group').on('group_alerts').columns(['group_id', 'id']).execute();
      await db.schema
        .createTable('offset_resets')
        .$call(serialId(db, 'id'))
        .addColumn('group_id', 'text', groupId)
        .addColumn('topic', 'text', (c) => c.notNull())
        .addColumn('partition', 'integer', (c) => c.notNull())
        .addColumn('old_offset', 'bigint')
        .addColumn('new_offset', 'bigint', (c) => c.notNull())
        .addColumn('spec', 'text', (c) => c.notNull())
        .addColumn('requested_by', 'text', (c) => c.notNull())
        .addColumn('executed_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('offset_resets_by_group').on('offset_resets').columns(['group_id', 'id']).execute();
      await db.schema
        .createTable('offset_checkpoints')
        .addColumn('group_id', 'text', groupId)
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('topic', 'text', (c) => c.notNull())
        .addColumn('partition', 'integer', (c) => c.notNull())
        .addColumn('offset', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('offset_checkpoints_pk', ['group_id', 'name', 'topic', 'partition'])
        .execute();
      await db.schema
        .createTable('producer_ids')
        .$call(serialId(db, 'producer_id'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0004-push-subscriptions': {
    // Where a push subscription delivers (an HTTP endpoint: webhook; none: WebSocket members) and how many
    // requests per partition may be in flight.
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('subscriptions').addColumn('push_endpoint', 'text').execute();
      await db.schema
        .alterTable('subscriptions')
        .addColumn('max_in_flight', 'integer', (c) => c.notNull().defaultTo(1).check(sql.raw('max_in_flight >= 1')))
        .execute();
    },
  },
  '0005-retries-dead-letters': {
    // Retry policies of subscriptions, tier topics in use, dead-letter settings; alerts that resolve; what was
    // done to dead letters (redrives and purges, with who asked).
    async up(db: Kysely<unknown>): Promise<void> {
      const subscriptions = () => db.schema.alterTable('subscriptions');
      await subscriptions().addColumn('retry_delays_ms', 'text').execute();
      await subscriptions().addColumn('max_attempts', 'integer').execute();
      await subscriptions().addColumn('dead_letter_topic', 'text').execute();
      await subscriptions().addColumn('retry_tiers', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      await subscriptions().addColumn('dead_letter_alert_depth', 'integer', (c) => c.notNull().defaultTo(1)).execute();
      await subscriptions().addColumn('webhook_max_attempts', 'integer', (c) => c.notNull().defaultTo(5)).execute();
      await db.schema.alterTable('group_alerts').addColumn('resolved_at', 'bigint').execute();
      await db.schema
        .createTable('dead_letter_actions')
        .$call(serialId(db, 'id'))
        .addColumn('group_id', 'text', (c) => c.notNull().references('groups.group_id').onDelete('cascade'))
        .addColumn('topic', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull().check(sql.raw("action in ('redrive', 'purge')")))
        .addColumn('first_offset', 'bigint', (c) => c.notNull())
        .addColumn('end_offset', 'bigint', (c) => c.notNull())
        .addColumn('records', 'bigint', (c) => c.notNull())
        .addColumn('requested_by', 'text', (c) => c.notNull())
        .addColumn('executed_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('dead_letter_actions_by_subscription').on('dead_letter_actions').columns(['group_id', 'topic', 'id']).execute();
    },
  },
  '0006-monitoring': {
    // Health thresholds of subscriptions; who acknowledged an alert, and when; webhooks alerts are POSTed to.
    async up(db: Kysely<unknown>): Promise<void> {
      const subscriptions = () => db.schema.alterTable('subscriptions');
      await subscriptions().addColumn('headroom_warn_ratio', 'real', (c) => c.notNull().defaultTo(0.25)).execute();
      await subscriptions().addColumn('stall_ms', 'bigint', (c) => c.notNull().defaultTo(300_000)).execute();
      await db.schema.alterTable('group_alerts').addColumn('acknowledged_at', 'bigint').execute();
      await db.schema.alterTable('group_alerts').addColumn('acknowledged_by', 'text').execute();
      await db.schema.createIndex('group_alerts_by_resolution').on('group_alerts').columns(['resolved_at', 'id']).execute();
      await db.schema
        .createTable('alert_sinks')
        .$call(serialId(db, 'id'))
        .addColumn('url', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0007-topic-deletions': {
    // Topics deleted from the catalog whose files and committed offsets are still to be removed (a crash may
    // come in between: the next start finishes the deletion).
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('topic_deletions')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('partitions', 'integer', (c) => c.notNull())
        .addColumn('requested_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0008-users': {
    // Principals and their bearer tokens, stored as a salted hash (docs/security.md).
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('users')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('admin', 'integer', (c) => c.notNull())
        .addColumn('token_id', 'text', (c) => c.notNull().unique())
        .addColumn('token_salt', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('rotated_at', 'bigint')
        .execute();
    },
  },
  '0009-audit': {
    // Who did which offset, data or user operation (docs/security.md).
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('audit_log')
        .$call(serialId(db, 'id'))
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('principal', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('target', 'text', (c) => c.notNull())
        .addColumn('details', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0010-acls': {
    // Who may do what on which topic, group or the cluster (docs/security.md).
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('acls')
        .addColumn('principal', 'text', (c) => c.notNull())
        .addColumn('resource_type', 'text', (c) => c.notNull())
        .addColumn('resource_name', 'text', (c) => c.notNull())
        .addColumn('pattern_type', 'text', (c) => c.notNull())
        .addColumn('operation', 'text', (c) => c.notNull())
        .addColumn('permission', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('acls_pk', ['principal', 'resource_type', 'resource_name', 'pattern_type', 'operation', 'permission'])
        .execute();
    },
  },
  '0011-user-scram': {
    // The SCRAM-SHA-256 credential of each user's token, for SASL on the Kafka listener (docs/security.md).
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('users').addColumn('token_scram', 'text').execute();
    },
  },
  '0012-binary-collation': {
    // Names order by their bytes on every engine (SQLite's BINARY): on PostgreSQL the text columns lists are
    // ordered by take the "C" collation, whatever the database's own is (en_US would put 'a' before 'B').
    async up(db: Kysely<unknown>): Promise<void> {
      if (!isPostgres(db)) return;
      const columns: Record<string, string[]> = {
        topics: ['name'], groups: ['group_id'], subscriptions: ['group_id', 'topic'], topic_deletions: ['name'],
        offset_checkpoints: ['name', 'topic'], users: ['name'], acls: ['principal', 'resource_type', 'resource_name', 'operation', 'permission'],
      };
      for (const [table, names] of Object.entries(columns)) {
        for (const name of names) await sql`alter table ${sql.table(table)} alter column ${sql.ref(name)} type text collate "C"`.execute(db);
      }
    },
  },
  '0013-log-owner': {
    // The data directory whose log the catalog describes: while the log lives in a data directory, a catalog on
    // PostgreSQL serves one broker, and a second one (another data directory) is refused.
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('log_owner')
        .addColumn('singleton', 'integer', (c) => c.primaryKey().check(sql.raw('singleton = 1')))
        .addColumn('data_dir_id', 'text', (c) => c.notNull())
        .execute();
    },
  },
  '0014-one-open-alert': {
    // At most one unresolved alert per subject (group, kind, topic, partition), so that brokers sharing the catalog
    // raise an alert once (a conditional insert) whichever of them raise it at once. Duplicates raised before (by
    // several brokers of a cluster) are resolved at their creation, the earliest one staying open.
    async up(db: Kysely<unknown>): Promise<void> {
      await sql`update group_alerts set resolved_at = created_at where resolved_at is null and id not in (
        select min(id) from group_alerts where resolved_at is null group by group_id, kind, topic, ${sql.ref('partition')})`.execute(db);
      await db.schema.createIndex('group_alerts_one_open').on('group_alerts').columns(['group_id', 'kind', 'topic', 'partition']).unique()
        .where(sql.ref('resolved_at'), 'is', null).execute();
    },
  },
  '0015-subscription-first-commit': {
    // When each group first committed an offset of each topic it subscribes to: a broker whose offset store holds
    // none of a group's offsets although the group committed refuses to start (a lost or restored store). Left null
    // for subscriptions that already exist: whether they committed is not known here; their next commit sets it.
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('subscriptions').addColumn('first_commit_at', 'bigint').execute();
    },
  },
  '0016-audit-outcome': {
    // Refused operations are audited too (docs/security.md): each entry says whether it was done or refused.
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('audit_log').addColumn('outcome', 'text', (c) => c.notNull().defaultTo('done')).execute();
    },
  },
  '0017-share-groups': {
    // Share groups (docs/consumer-groups.md): a subscription's type and share settings, as JSON; null: a consumer group's.
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('subscriptions').addColumn('share_settings', 'text').execute();
    },
  },
  '0018-group-configs': {
    // A group's configs set over the Kafka protocol (IncrementalAlterConfigs on a group, e.g. share.auto.offset.reset),
    // as JSON, kept whether or not the group subscribes to anything yet; null: none.
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable('groups').addColumn('configs', 'text').execute();
    },
  },
  '0019-health-history': {
    // The history the console charts, kept for 24 hours (docs/monitoring.md, "Console: charts that last"): each group
    // partition's health, a sample per minute; each topic's records and bytes produced and fetched, a count per minute.
    // No foreign keys: a sample may be written just after its group or topic was deleted (it is pruned after 24 hours).
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('health_series')
        .$call(serialId(db, 'id'))
        .addColumn('group_id', 'text', (c) => c.notNull())
        .addColumn('topic', 'text', (c) => c.notNull())
        .addColumn('partition', 'integer', (c) => c.notNull())
        .addUniqueConstraint('health_series_subject', ['group_id', 'topic', 'partition'])
        .execute();
      await db.schema
        .createTable('health_samples')
        .addColumn('series_id', 'integer', (c) => c.notNull())
        .addColumn('minute', 'bigint', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('lag', 'bigint')
        .addColumn('time_lag_ms', 'bigint')
        .addColumn('headroom_ms', 'bigint')
        .addColumn('headroom_bytes', 'bigint')
        .addColumn('committed_offset', 'bigint')
        .addPrimaryKeyConstraint('health_samples_pk', ['series_id', 'minute'])
        .execute();
      await db.schema.createIndex('health_samples_by_minute').on('health_samples').column('minute').execute();
      await db.schema
        .createTable('topic_traffic')
        .addColumn('topic', 'text', (c) => c.notNull())
        .addColumn('minute', 'bigint', (c) => c.notNull())
        .addColumn('produced_records', 'bigint', (c) => c.notNull())
        .addColumn('produced_bytes', 'bigint', (c) => c.notNull())
        .addColumn('fetched_records', 'bigint', (c) => c.notNull())
        .addColumn('fetched_bytes', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('topic_traffic_pk', ['topic', 'minute'])
        .execute();
      await db.schema.createIndex('topic_traffic_by_minute').on('topic_traffic').column('minute').execute();
    },
  },
};
