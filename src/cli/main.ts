/** Runs the `onelog` command line. Errors print their code and context on stderr and exit 1. */
import { reportError } from './common.js';
import { buildProgram } from './program.js';

buildProgram().parseAsync(process.argv).catch((err: unknown) => {
  reportError(err);
  process.exitCode = 1;
});
