import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Required into each measured process: its peak RSS on stderr as it exits (`RSS <kilobytes>`). */
const HOOK = `process.on('exit', () => require('fs').writeSync(2, '\\nRSS ' + process.resourceUsage().maxRSS + '\\n'));`;

/** Writes the RSS hook into `dir`, where `timedProcess` requires it from. */
export const writeRssHook = (dir: string) => writeFileSync(join(dir, 'rss.js'), HOOK);

/**
 * A Node process run to its end, as a user runs it: its time from spawn to exit, its peak RSS and its stdout; a
 * process that fails (or prints no RSS) fails the bench, naming what it said last.
 */
export function timedProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ ms: number; rssMb: number; out: string }> {
  return new Promise((done, fail) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, ['--require', join(cwd, 'rss.js'), ...args], { env, cwd });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.once('error', fail);
    child.once('exit', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const kb = /RSS (\d+)/.exec(err)?.[1];
      if (code !== 0 || !kb) return fail(new Error(`${args.join(' ')} exited ${code}: ${err.slice(-500)}`));
      done({ ms, rssMb: Number(kb) / 1024, out });
    });
  });
}
