/**
 * The partition assignors by name.
 */
import type { Assignor, AssignorName } from '../assignor.js';
import { rangeAssignor } from './range.js';
import { roundRobinAssignor } from './round-robin.js';
import { stickyAssignor } from './sticky.js';

export { rangeAssignor, roundRobinAssignor, stickyAssignor };

const ASSIGNORS: Readonly<Record<AssignorName, Assignor>> = {
  range: rangeAssignor,
  'round-robin': roundRobinAssignor,
  sticky: stickyAssignor,
};

/**
 * The assignor called `name`: `range` (as Kafka's RangeAssignor), `round-robin` (as Kafka's
 * RoundRobinAssignor) or `sticky` (as Kafka's StickyAssignor / KIP-848 `uniform`). Stateless and shared.
 */
export function assignorFor(name: AssignorName): Assignor {
  return ASSIGNORS[name];
}
