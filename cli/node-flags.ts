/**
 * Node flags the CLI runs a command with (bin/tenant-integrations.js starts it again with them). A sync reads a
 * stream's every record in one long pass: with V8's young generation at 4 MB a half instead of its default 16, a
 * full pass of a million records peaked ~25 MB lower in the same time (docs/benchmarks.md, "An index of
 * fingerprints, and a smaller young generation"). bench/sync.ts runs its sync child with the same flags, so it
 * measures what users run.
 */
export const SYNC_NODE_FLAGS = ['--max-semi-space-size=4'];

/** The flags a command runs with: none unless it is a sync, or when the process or NODE_OPTIONS sets them. */
export function nodeFlagsFor(args: string[], execArgv: string[], nodeOptions = ''): string[] {
  if (args[0] !== 'sync') return [];
  const set = (flag: string) => flag.split('=')[0];
  return SYNC_NODE_FLAGS.filter(
    (flag) => !execArgv.some((a) => set(a) === set(flag)) && !nodeOptions.includes(set(flag)),
  );
}
