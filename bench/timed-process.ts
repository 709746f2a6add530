import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Required into each measured process: its peak RSS on stderr as it exits (`RSS <kilobytes>`). */
const HOOK = `process.on('exit', () => require('fs').writeSync(2, '\\nRSS ' + process.resourceUsage().maxRSS + '\\n'));`;

/** Writes the RSS hook into `dir`, where `timedProcess` requires it from. */
export const writeRssHook = (dir: string) => writeFileSync(join(dir, 'rss.js'), HOOK);

/**
 * A command run to its end: its time from spawn to exit, the peak RSS each of its processes printed as it exited
 * (`RSS <kilobytes>` on stderr, in the order they exited), and its stdout; a command that fails (or prints no RSS)
 * fails the bench, naming what it said last.
 */
export function timedCommand(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ ms: number; rssMbs: number[]; out: string }> {
  return new Promise((done, fail) => {
    const started = process.hrtime.bigint();
    const child = spawn(command, args, { env, cwd });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.once('error', fail);
    child.once('exit', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const rssMbs = [...err.matchAll(/RSS (\d+)/g)].map((m) => Number(m[1]) / 1024);
      if (code !== 0 || !rssMbs.length)
        return fail(new Error(`${args.join(' ')} exited ${code}: ${err.slice(-800)}`));
      done({ ms, rssMbs, out });
    });
  });
}

/**
 * A Node process run to its end, as a user runs it (the RSS hook `writeRssHook` wrote into `cwd` required first): its
 * time, the peak RSS of the first of its processes to exit (the command itself, where the CLI started it again with
 * its flags) and its stdout.
 */
export async function timedProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<{ ms: number; rssMb: number; out: string }> {
  const r = await timedCommand(process.execPath, ['--require', join(cwd, 'rss.js'), ...args], env, cwd);
  return { ms: r.ms, rssMb: r.rssMbs[0], out: r.out };
}
