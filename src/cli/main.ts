/**
 * Runs the `onelog` command line. Errors print their code and context on stderr and exit 1. A command whose work
 * is left unsettled when nothing is left to wait for (a request whose connection closed without an answer or an
 * error) exits 1 too, saying so: the CLI never ends with 0 having not finished.
 */
import { OnelogError } from '../protocol/errors.js';
import { reportError } from './common.js';
import { buildProgram } from './program.js';

let settled = false;
buildProgram().parseAsync(process.argv).then(() => { settled = true; }, (err: unknown) => {
  settled = true;
  reportError(err);
  process.exitCode = 1;
});
process.once('beforeExit', () => {
  if (settled) return;
  reportError(new OnelogError('NETWORK_ERROR', 'the command ended before its work did: a request got neither an answer nor an error (a closed connection?); run it again'));
  process.exitCode = 1;
});
