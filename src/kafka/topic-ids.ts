/**
 * Topic ids on the Kafka protocol (KIP-516: Metadata v10+, and the share group APIs, which name topics only by id).
 * onelog names topics; a topic's id is derived, never stored: the first 16 bytes of the SHA-256 of its name and its
 * creation time, so every broker of a cluster tells the same id, a restart keeps it, and a topic deleted and created
 * again under its name has a new one (as in Kafka, where clients tell a recreated topic by its id), unless created in
 * the same millisecond as the one deleted.
 */
import { createHash } from 'node:crypto';
import type { OnelogApi } from '../protocol/api.js';

/** What the ids are read through: the broker as the principal may describe it. */
type TopicsApi = Pick<OnelogApi, 'describeTopic' | 'listTopics'>;

/** Kafka's zero uuid: no topic. */
export const ZERO_TOPIC_ID = '0'.repeat(32);

/** The id of the topic `name` created at `createdAt` (ms since the epoch): 32 hex digits, never the zero uuid. */
export function topicIdOf(name: string, createdAt: number): string {
  const hex = createHash('sha256').update(`${name}\0${createdAt}`).digest('hex').slice(0, 32);
  return hex === ZERO_TOPIC_ID ? `${hex.slice(0, 31)}1` : hex;
}

/**
 * The ids of the topics this listener told clients of, and back: a topic's id is learnt when it is described (every
 * Metadata answer describes the topics it names), and an id not known is looked up among every topic the principal
 * may describe.
 */
export class TopicIds {
  /** name -> its id now. */
  private readonly byName = new Map<string, string>();
  /** id -> the name it was learnt for (valid while that name's id is still it). */
  private readonly byId = new Map<string, string>();

  /** Records the id of `name`, created at `createdAt`, and returns it. */
  learn(name: string, createdAt: number): string {
    const id = topicIdOf(name, createdAt);
    this.byName.set(name, id);
    this.byId.set(id, name);
    return id;
  }

  /** The id of a topic (described through `api`). @throws what `api.describeTopic` throws (`UNKNOWN_TOPIC`) */
  async idOf(api: TopicsApi, name: string): Promise<string> {
    return this.byName.get(name) ?? this.learn(name, (await api.describeTopic(name)).createdAt);
  }

  /**
   * The name of the topic with id `id`, or null when no topic `api` may describe has it (deleted, or never): checked
   * against the topic as it is now (one describe), else looked up among every topic.
   */
  async nameOf(api: TopicsApi, id: string): Promise<string | null> {
    const known = this.byId.get(id);
    if (known !== undefined) {
      // Still that topic's id? It may have been deleted, or created again (a new id), since it was learnt.
      const d = await api.describeTopic(known).catch(() => null);
      if (d !== null && this.learn(known, d.createdAt) === id) return known;
      this.byId.delete(id);
    }
    for (const { topic } of await api.listTopics()) {
      const d = await api.describeTopic(topic).catch(() => null);
      if (d !== null && this.learn(topic, d.createdAt) === id) return topic;
    }
    return null;
  }
}
