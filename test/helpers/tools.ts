/**
 * The tools from outside npm that some tests drive: kcat (librdkafka's command line) and Debian's Chromium. A fresh
 * machine has neither; `npm test` must pass there. A test that needs one runs when it is installed; on a
 * developer's machine without it, it is skipped with one line naming the tool and the command that installs it;
 * under `CI=true` (`.ci/run`, which installs both) a missing tool is an error at once, so CI never skips.
 */
import fs from 'node:fs';
import path from 'node:path';

/** A tool a test drives, where it is looked for and how to install it. */
export interface ExternalTool {
  /** The tool's name in the skip line. */
  name: string;
  /** An absolute path, or a command name looked up on PATH. */
  command: string;
  /** What installs it, e.g. `apt-get install kcat`. */
  install: string;
}

/** kcat, spawned as `kcat` from PATH. */
export const KCAT: ExternalTool = { name: 'kcat', command: 'kcat', install: 'apt-get install kcat' };
/** Debian's Chromium, launched by playwright-core from its fixed path (never a downloaded browser). */
export const CHROMIUM: ExternalTool = { name: 'Chromium', command: '/usr/bin/chromium', install: 'apt-get install chromium' };

/** Whether `command` is an executable file: itself when a path, else in a folder of `pathVariable`. */
function installed(command: string, pathVariable: string): boolean {
  const candidates = path.isAbsolute(command) ? [command] : pathVariable.split(path.delimiter).filter(Boolean).map((dir) => path.join(dir, command));
  return candidates.some((file) => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  });
}

/**
 * Whether the tests that need `tool` can run here, for `describe.runIf` / `it.runIf`.
 * @param env the environment read: `CI` and `PATH` @default process.env
 * @param warn where the skip line goes @default standard error
 * @returns true when installed; false, with one line `skipped: ... needs kcat (not installed): apt-get install kcat`,
 *   when missing
 * @throws Error when missing under `CI=true`: CI installs every tool and never skips
 */
export function hasTool(tool: ExternalTool, what: string, env: NodeJS.ProcessEnv = process.env, warn: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): boolean {
  if (installed(tool.command, env.PATH ?? '')) return true;
  if (env.CI === 'true') throw new Error(`${what} needs ${tool.name} (${tool.command}), which is not installed; CI=true never skips: ${tool.install}`);
  warn(`skipped: ${what} needs ${tool.name} (not installed): ${tool.install}`);
  return false;
}
