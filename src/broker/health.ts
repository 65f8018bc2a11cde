/**
 * The broker's dependencies, probed (docs/monitoring.md "Health of the dependencies"): each store it needs is checked
 * with a bounded timeout, every `intervalMs` and at each `GET /health`, and a change of state is logged (warn when one
 * turns down or blocked, info when it is back). One probe round runs at a time: a request arriving meanwhile gets its
 * answer.
 */
import type { Logger } from '../common/logger.js';
import type { DependencyHealth, DependencyName, DependencyStatus, HealthReport } from '../protocol/health.js';

/** How one dependency is checked. */
export interface DependencyProbe {
  name: DependencyName;
  /** See {@link DependencyHealth.engine}. */
  engine: string;
  /** See {@link DependencyHealth.probe}. */
  probe: string;
  /**
   * Resolves when the dependency answered; null for a local file with nothing to probe.
   * @param timeoutMs the bound it may set on the server (three quarters of the check's timeout), ms
   */
  check: ((timeoutMs: number) => Promise<void>) | null;
}

/** Options of {@link DependencyChecks}. */
export interface DependencyChecksOptions {
  /** A probe not answered within this is `blocked`, ms. @default 2000 */
  timeoutMs?: number;
  /** How often the dependencies are probed besides at each `/health`, ms; 0 = only at `/health`. @default 5000 */
  intervalMs?: number;
}

/** A probe's outcome before it is compared with the last. */
interface Outcome {
  status: DependencyStatus;
  latencyMs: number;
  error?: string;
}

export class DependencyChecks {
  private readonly states = new Map<DependencyName, DependencyHealth>();
  private round: Promise<HealthReport> | null = null;
  private readonly timer: NodeJS.Timeout | null;
  private readonly timeoutMs: number;

  constructor(private readonly probes: readonly DependencyProbe[], private readonly logger: Logger, options: DependencyChecksOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 2000;
    const now = Date.now();
    for (const p of probes) this.states.set(p.name, { status: 'ok', engine: p.engine, probe: p.probe, latencyMs: 0, since: now });
    const intervalMs = options.intervalMs ?? 5000;
    this.timer = intervalMs > 0 ? setInterval(() => void this.check(), intervalMs).unref() : null;
  }

  /** Whether each dependency was up at its last probe, by name (`onelog_dependency_up`). */
  up(): ReadonlyMap<string, boolean> {
    return new Map([...this.states].map(([name, s]) => [name, s.status === 'ok']));
  }

  /** Probes every dependency now (or joins the round under way) and reports them. Never throws. */
  check(): Promise<HealthReport> {
    this.round ??= this.probeAll().finally(() => {
      this.round = null;
    });
    return this.round;
  }

  /** Stops the periodic probes. */
  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }

  private async probeAll(): Promise<HealthReport> {
    const outcomes = await Promise.all(this.probes.map((p) => this.probeOne(p)));
    const now = Date.now();
    this.probes.forEach((p, i) => {
      const was = this.states.get(p.name)!;
      const outcome = outcomes[i]!;
      const since = outcome.status === was.status ? was.since : now;
      this.states.set(p.name, { status: outcome.status, engine: p.engine, probe: p.probe, latencyMs: outcome.latencyMs, ...(outcome.error === undefined ? {} : { error: outcome.error }), since });
      if (outcome.status === was.status) return;
      const fields = { dependency: p.name, engine: p.engine, status: outcome.status, was: was.status, forMs: now - was.since };
      if (outcome.status === 'ok') this.logger.info(fields, `${p.name} is back (${p.engine})`);
      else this.logger.warn({ ...fields, err: outcome.error }, `${p.name} is ${outcome.status} (${p.engine}): ${outcome.error}`);
    });
    const dependencies = Object.fromEntries(this.states) as HealthReport['dependencies'];
    const down = [...this.states].filter(([, s]) => s.status !== 'ok').map(([name]) => name);
    return { status: down.length === 0 ? 'ok' : 'down', down, dependencies };
  }

  private async probeOne(p: DependencyProbe): Promise<Outcome> {
    if (p.check === null) return { status: 'ok', latencyMs: 0 };
    const began = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.timeoutMs);
    });
    try {
      // The probe's own bound (PostgreSQL's lock_timeout) is three quarters of ours, so its answer, which says why, comes first.
      const answer = await Promise.race([p.check(Math.floor(this.timeoutMs * 0.75)).then(() => 'ok' as const), timedOut]);
      const latencyMs = Math.round(performance.now() - began);
      if (answer === 'timeout') return { status: 'blocked', latencyMs, error: `no answer to ${p.probe} within ${this.timeoutMs} ms` };
      return { status: 'ok', latencyMs };
    } catch (err) {
      const latencyMs = Math.round(performance.now() - began);
      const message = err instanceof Error ? err.message : String(err);
      // A lock waited for until the server's lock_timeout (or a statement_timeout) is a block, not a failure of the server.
      return { status: (err as { context?: { waitedMs?: unknown } }).context?.waitedMs === undefined ? 'down' : 'blocked', latencyMs, error: message };
    } finally {
      clearTimeout(timer);
    }
  }
}
