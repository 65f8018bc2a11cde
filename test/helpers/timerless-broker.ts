/**
 * An embedded broker on a manual clock with no background timer (session expiry, retention, compaction, alert
 * evaluation): a test crosses a session timeout or a lock by advancing the clock, and the next request notices.
 */
import { Broker } from '../../src/broker/broker.js';
import type { BrokerOptions } from '../../src/broker/options.js';
import type { ManualClock } from '../../src/common/clock.js';

/** Opens such a broker on `dataDir` (again after a close: a restart). */
export function openTimerlessBroker(dataDir: string, clock: ManualClock, extra: Partial<BrokerOptions> = {}): Promise<Broker> {
  return Broker.open({
    dataDir, clock, sessionCheckIntervalMs: 0, retentionCheckIntervalMs: 0, compactionIntervalMs: 0, monitoring: { alertCheckIntervalMs: 0 }, ...extra,
  });
}
