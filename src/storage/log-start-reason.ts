/** Why a partition's log start offset moved (as Kafka's LogStartOffsetIncrementReason); checkpointed and logged with every move. */
export type LogStartReason = 'delete-records' | 'retention-time' | 'retention-size' | 'compaction';
