/** The slice of a pino logger every layer uses (the storage engine included), so they log without depending on pino. */
export interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  /** Something broke that needs an operator (a disk error stopped writes). */
  error(obj: object, msg: string): void;
}

/** A logger that drops everything; the default for tests and embedded use without logging. */
export const silentLogger: Logger = { info: () => {}, warn: () => {}, error: () => {} };
