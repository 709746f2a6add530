/**
 * Node flags the CLI runs a command with (bin/tenant-integrations.js starts it again with them). A sync reads a
 * stream's every record in one long pass, and what outlives a request (a page waiting, a block upload in flight) is
 * promoted and then kept until V8's next full collection, which by default waits for the old generation to grow by
 * a factor of up to 4. With the young generation at 4 MB a half instead of 16, and the old one collected once it
 * has grown by 10 %, a 1 M-record full pass through the blob sink peaked at ~133 MB instead of ~145 (and ~121 with
 * --optimize-for-size, which cost a first run a third more CPU): docs/benchmarks.md, "An old generation collected
 * sooner". bench/sync.ts runs its sync child with the same flags, so it measures what users run.
 */
export const SYNC_NODE_FLAGS = ['--max-semi-space-size=4', '--heap-growing-percent=10'];

/** A V8 flag's name as V8 reads it: `--x_y=1` sets the same flag as `--x-y=4`. */
const nameOf = (flag: string) => flag.split('=')[0].replaceAll('_', '-');

/** The flags a command runs with: none unless it is a sync, and none of those the process or NODE_OPTIONS sets. */
export function nodeFlagsFor(args: string[], execArgv: string[], nodeOptions = ''): string[] {
  if (args[0] !== 'sync') return [];
  const own = new Set([...execArgv, ...nodeOptions.split(/\s+/)].filter(Boolean).map(nameOf));
  return SYNC_NODE_FLAGS.filter((flag) => !own.has(nameOf(flag)));
}
