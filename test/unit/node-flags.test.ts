import { nodeFlagsFor, SYNC_NODE_FLAGS } from '../../cli/node-flags';

describe('the Node flags a CLI command runs with', () => {
  it('a sync gets a small young generation; other commands run with Node’s defaults', () => {
    expect(nodeFlagsFor(['sync', '--sink', 'dir:./out'], [])).toEqual(['--max-semi-space-size=4']);
    expect(SYNC_NODE_FLAGS).toEqual(['--max-semi-space-size=4']);
    for (const command of ['export', 'import', 'login', 'doctor', 'sandbox', 'discover'])
      expect(nodeFlagsFor([command], [])).toEqual([]);
  });

  it('started with them already (or with the operator’s own value), it is not started again', () => {
    expect(nodeFlagsFor(['sync'], ['--max-semi-space-size=4'])).toEqual([]);
    expect(nodeFlagsFor(['sync'], ['--max-semi-space-size=32'])).toEqual([]);
    expect(nodeFlagsFor(['sync'], [], '--max-semi-space-size=8 --enable-source-maps')).toEqual([]);
    expect(nodeFlagsFor(['sync'], ['--inspect'], '--enable-source-maps')).toEqual([
      '--max-semi-space-size=4',
    ]);
  });
});
