import { flagsNotSet, SYNC_NODE_FLAGS } from '../shared/node-flags';

// bin/tenant-integrations.js starts a sync again with these flags; bench/sync.ts runs its sync child with them, so it
// measures what users run. Why these: shared/node-flags.ts.
export { SYNC_NODE_FLAGS };

/** The flags a command runs with: none unless it is a sync, and none of those the process or NODE_OPTIONS sets. */
export function nodeFlagsFor(args: string[], execArgv: string[], nodeOptions = ''): string[] {
  if (args[0] !== 'sync') return [];
  return flagsNotSet(SYNC_NODE_FLAGS, execArgv, nodeOptions);
}
