/**
 * A group's configs on the Kafka protocol (KIP-848 and KIP-932 group configs: IncrementalAlterConfigs and
 * DescribeConfigs on a GROUP resource), kept by the broker per group (catalog: groups.configs), and what each sets of
 * onelog's share subscriptions: a share group's subscription takes them when a member's ShareGroupHeartbeat creates it,
 * and an alter applies them to the subscriptions the group has.
 */
import type { SubscribeRequest } from '../protocol/subscriptions.js';
import { OnelogError } from '../protocol/errors.js';

/** The subscription settings the configs set. */
export type ShareSettingsFromConfigs = Pick<SubscribeRequest, 'startPolicy' | 'lockMs' | 'maxDeliveries'>;

interface GroupConfig {
  /** Kafka's default, as DescribeConfigs tells it for a group that did not set it. */
  default: string;
  /** @throws OnelogError `INVALID_CONFIG` naming what is allowed */
  check(value: string): void;
  /** What it sets of a share subscription; nothing for a config onelog only keeps. */
  apply?(value: string, to: ShareSettingsFromConfigs): void;
}

const invalid = (name: string, value: string, allowed: string) =>
  new OnelogError('INVALID_CONFIG', `group config ${name}=${JSON.stringify(value)} is not allowed: ${allowed}`, { name, value });

function integer(name: string, min: number, max: number): (value: string) => void {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw invalid(name, value, `a whole number from ${min} to ${max}`);
  };
}

function oneOf(name: string, values: readonly string[]): (value: string) => void {
  return (value) => {
    if (!values.includes(value)) throw invalid(name, value, `one of ${values.join(', ')}`);
  };
}

/** The group configs onelog takes, by Kafka's name. */
export const GROUP_CONFIGS: Readonly<Record<string, GroupConfig>> = {
  // Where a share-partition starts with no state: the subscription's start policy (Kafka's default is latest, as onelog's).
  'share.auto.offset.reset': {
    default: 'latest', check: oneOf('share.auto.offset.reset', ['earliest', 'latest']),
    apply: (v, to) => { to.startPolicy = v as 'earliest' | 'latest'; },
  },
  // How long a member holds an acquired record: the subscription's lockMs.
  'share.record.lock.duration.ms': {
    default: '30000', check: integer('share.record.lock.duration.ms', 1000, 3_600_000),
    apply: (v, to) => { to.lockMs = Number(v); },
  },
  // Deliveries of a record before its dead letter: the subscription's maxDeliveries (Kafka's bounds are 2 to 10).
  'share.delivery.count.limit': {
    default: '5', check: integer('share.delivery.count.limit', 1, 100),
    apply: (v, to) => { to.maxDeliveries = Number(v); },
  },
  // onelog has no transactions: every record a share group reads is committed, whichever level is set.
  'share.isolation.level': { default: 'read_uncommitted', check: oneOf('share.isolation.level', ['read_committed', 'read_uncommitted']) },
};

/** Checks a config by name and value. @throws OnelogError `INVALID_CONFIG` for a name onelog does not take, or a bad value */
export function checkGroupConfig(name: string, value: string): void {
  const config = GROUP_CONFIGS[name];
  if (config === undefined) throw new OnelogError('INVALID_CONFIG', `group config ${name} is not one onelog takes: ${Object.keys(GROUP_CONFIGS).join(', ')}`, { name });
  config.check(value);
}

/** What a group's configs set of its share subscriptions. */
export function shareSettings(configs: Readonly<Record<string, string>>): ShareSettingsFromConfigs {
  const out: ShareSettingsFromConfigs = {};
  for (const [name, value] of Object.entries(configs)) GROUP_CONFIGS[name]?.apply?.(value, out);
  return out;
}
