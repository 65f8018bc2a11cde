/**
 * Automatic topic creation for Kafka clients (`serve --auto-create-topics`, Kafka's auto.create.topics.enable): off
 * by default. A topic a client names that does not exist is created with the listener's partition count, through the
 * connection's principal (ACLs: `create` on the topic or the cluster; audited as any creation).
 */
import { OnelogError } from '../protocol/errors.js';
import type { RequestContext } from './apis/api.js';

/**
 * Runs `work` on `topic`; when it fails with `UNKNOWN_TOPIC` and the listener creates topics, creates the topic (with
 * another request's creation of it meanwhile as good as its own) and runs `work` again.
 * @param allowed whether the request lets the broker create it (Metadata's allow_auto_topic_creation) @default true
 * @throws what `work` throws; the creation's errors (`FORBIDDEN`, `INVALID_TOPIC`, ...)
 */
export async function withAutoCreate<T>(ctx: Pick<RequestContext, 'api' | 'autoCreateTopics'>, topic: string, work: () => Promise<T>, allowed = true): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof OnelogError) || err.code !== 'UNKNOWN_TOPIC' || ctx.autoCreateTopics === null || !allowed) throw err;
    await ctx.api.createTopic({ topic, partitions: ctx.autoCreateTopics.partitions }).catch((e: unknown) => {
      if (!(e instanceof OnelogError && e.code === 'TOPIC_ALREADY_EXISTS')) throw e;
    });
    return work();
  }
}
