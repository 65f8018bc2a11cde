/**
 * When `onelog consume` stops: after `idleTimeoutMs` with nothing new (re-armed by each record, or when the member
 * is granted partitions), and on SIGINT or SIGTERM.
 */

/** The triggers of one run of a consumer: {@link StopTriggers.arm} restarts the idle count; dispose before exiting. */
export interface StopTriggers {
  arm(): void;
  dispose(): void;
}

/** Calls `stop` after `idleTimeoutMs` ms since the last {@link StopTriggers.arm} (none: never idle), or on a signal. */
export function stopTriggers(stop: () => void, idleTimeoutMs: number | undefined): StopTriggers {
  let idleTimer: NodeJS.Timeout | undefined;
  const arm = () => {
    if (idleTimeoutMs === undefined) return;
    clearTimeout(idleTimer);
    idleTimer = setTimeout(stop, idleTimeoutMs);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  arm();
  return {
    arm,
    dispose: () => {
      clearTimeout(idleTimer);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    },
  };
}
