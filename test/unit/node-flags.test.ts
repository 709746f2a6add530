import { nodeFlagsFor, SYNC_NODE_FLAGS } from '../../cli/node-flags';
import { APP_NODE_OPTIONS, appRuntimeFlags } from '../../shared/node-flags';

describe('the Node flags a CLI command runs with', () => {
  it('a sync gets a small young generation and an old one collected sooner; other commands run with Node’s defaults', () => {
    expect(SYNC_NODE_FLAGS).toEqual(['--max-semi-space-size=4', '--heap-growing-percent=10']);
    expect(nodeFlagsFor(['sync', '--sink', 'dir:./out'], [])).toEqual(SYNC_NODE_FLAGS);
    for (const command of ['export', 'import', 'login', 'doctor', 'sandbox', 'discover'])
      expect(nodeFlagsFor([command], [])).toEqual([]);
  });

  it('started with them already (or with the operator’s own values), it is not started again', () => {
    expect(nodeFlagsFor(['sync'], SYNC_NODE_FLAGS)).toEqual([]);
    expect(nodeFlagsFor(['sync'], ['--max-semi-space-size=32', '--heap-growing-percent=50'])).toEqual([]);
    expect(nodeFlagsFor(['sync'], [], '--max-semi-space-size=8 --heap-growing-percent=0')).toEqual([]);
    // V8 reads `_` in a flag's name as `-`.
    expect(nodeFlagsFor(['sync'], ['--max_semi_space_size=8', '--heap_growing_percent=20'])).toEqual([]);
  });

  it('what the operator did not set is still added, and other flags leave it alone', () => {
    expect(nodeFlagsFor(['sync'], ['--inspect'], '--enable-source-maps')).toEqual(SYNC_NODE_FLAGS);
    expect(nodeFlagsFor(['sync'], [], '--max-semi-space-size=16')).toEqual(['--heap-growing-percent=10']);
    expect(nodeFlagsFor(['sync'], ['--heap-growing-percent=0'])).toEqual(['--max-semi-space-size=4']);
    // A flag whose name contains ours is another flag.
    expect(nodeFlagsFor(['sync'], [], '--min-semi-space-size=1')).toEqual(SYNC_NODE_FLAGS);
  });
});

describe('the heap flags of the Functions app', () => {
  it('NODE_OPTIONS carries the young generation; the growing factor, which Node refuses there, is left to start-up', () => {
    expect(APP_NODE_OPTIONS).toBe('--max-semi-space-size=4');
    expect([APP_NODE_OPTIONS, ...appRuntimeFlags([], '')]).toEqual(SYNC_NODE_FLAGS);
  });

  it('an operator’s own value, in the worker’s arguments or NODE_OPTIONS, is not overwritten', () => {
    expect(appRuntimeFlags(['--heap-growing-percent=0'], '')).toEqual([]);
    expect(appRuntimeFlags(['--heap_growing_percent=20'], '')).toEqual([]);
    expect(appRuntimeFlags(['--inspect'], '--max-semi-space-size=16')).toEqual(['--heap-growing-percent=10']);
  });
});
