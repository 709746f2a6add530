import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { resolve } from 'node:path';

export const CLI = resolve(__dirname, '../../bin/tenant-integrations.js');

/**
 * Runs the compiled CLI to completion (needs `npm run build`, which `npm test` does first); `nodeArgs` go to Node
 * before the script, as `node --flag bin/tenant-integrations.js …`.
 */
export function runCli(
  args: string[],
  opts: { env?: Record<string, string>; input?: string; cwd?: string; nodeArgs?: string[] } = {},
) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done, fail) => {
    const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), CLI, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

/** Starts a long-running CLI command and resolves with its first stdout line (the ready line). */
export function startCli(
  args: string[],
  opts: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [CLI, ...args], {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const firstLine = new Promise<string>((done, fail) => {
    let buf = '';
    const timer = setTimeout(
      () => fail(new Error(`no ready line within ${opts.timeoutMs ?? 30_000} ms; stderr: ${stderr}`)),
      opts.timeoutMs ?? 30_000,
    );
    child.stdout.on('data', (d) => {
      buf += d;
      const i = buf.indexOf('\n');
      if (i >= 0) {
        clearTimeout(timer);
        done(buf.slice(0, i));
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`exited with ${code} before its ready line; stderr: ${stderr}`));
    });
  });
  const stop = () =>
    new Promise<number | null>((done) => {
      if (child.exitCode !== null) return done(child.exitCode);
      child.once('exit', (code) => done(code));
      child.kill('SIGTERM');
    });
  return { child, firstLine, stop, stderr: () => stderr };
}
