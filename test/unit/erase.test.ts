import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirectorySink } from '../../shared/sinks/dir';
import { linesWithout } from '../../shared/sinks/erase';

const line = (id: string, title: string) =>
  `${JSON.stringify({ changeId: `c-${id}-${title}`, kind: 'created', id, record: { id, title } })}\n`;

describe('an erasure in a folder', () => {
  let dir: string;
  beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), 'ti-erase-'))));
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('rewrites the runs’ files only: a folder of the customer’s beside them keeps every byte, whatever it holds', async () => {
    const run = join(dir, '2026-11-28T10-00-00-000Z-1a2b3c4d');
    await mkdir(run);
    await writeFile(join(run, 'users.ndjson'), line('u-1', 'a') + line('u-2', 'b'));
    // Not the sink's: named like a run's file, holding the key, in folders that are no run's.
    const theirs = line('u-1', 'theirs');
    for (const folder of ['notes', '2026-11-28', 'backup-2026-11-28T10-00-00-000Z']) {
      await mkdir(join(dir, folder));
      await writeFile(join(dir, folder, 'users.ndjson'), theirs);
    }
    await writeFile(join(dir, 'users.ndjson'), theirs);
    const outcome = await new DirectorySink(dir).erase('acme', 'users', 'u-1');
    expect(outcome).toEqual({ erased: [{ place: join(run, 'users.ndjson'), count: 1 }] });
    expect(await readFile(join(run, 'users.ndjson'), 'utf8')).toBe(line('u-2', 'b'));
    for (const folder of ['notes', '2026-11-28', 'backup-2026-11-28T10-00-00-000Z'])
      expect(await readFile(join(dir, folder, 'users.ndjson'), 'utf8')).toBe(theirs);
    expect(await readFile(join(dir, 'users.ndjson'), 'utf8')).toBe(theirs);
  });

  it('takes a line out only when its id is the key: the key inside another record’s value stays', () => {
    const text = line('u-1', 'a') + line('u-10', 'mentions u-1') + 'not json u-1\n';
    expect(linesWithout(text, 'u-1')).toEqual({
      text: line('u-10', 'mentions u-1') + 'not json u-1\n',
      removed: 1,
    });
    expect(linesWithout(text, 'u-3')).toEqual({ text, removed: 0 });
  });
});
