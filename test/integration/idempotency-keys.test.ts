import { createHash } from 'node:crypto';
import { TableClient } from '@azure/data-tables';
import { startAzurite, type RunningAzurite } from '../../cli/azurite';
import { IdempotencyKeys } from '../../shared/state/idempotency';

jest.setTimeout(60_000);

/*
 * The Idempotency-Keys of exports and imports on real Table storage (Azurite). They moved from the export's ledger to
 * shared/state/idempotency.ts, naming what a key started `id` instead of `exportId`: keys claimed before the move
 * must still answer as they did, for their 24 hours.
 */
let azurite: RunningAzurite;
let table: TableClient;
let keys: IdempotencyKeys;
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

beforeAll(async () => {
  azurite = await startAzurite();
  table = TableClient.fromConnectionString(azurite.connectionString, 'exportledger', {
    allowInsecureConnection: true,
  });
  keys = new IdempotencyKeys(table);
});
afterAll(() => azurite?.stop());

describe('Idempotency-Keys', () => {
  it('a key claimed before the move (its row names `exportId`) still answers with what it started', async () => {
    await table.createTable();
    const createdAt = new Date().toISOString();
    await table.createEntity({
      partitionKey: 'key_caller-1',
      rowKey: sha('order-42'),
      exportId: '6f1c1f5e-5d5a-4c59-9c4e-0a8a4b0c2d11',
      bodyHash: 'hash-of-the-first-body',
      createdAt,
    });
    const answer = await keys.claimKey(
      'caller-1',
      'order-42',
      { id: 'a-new-request', bodyHash: 'hash-of-the-first-body', createdAt },
      Date.now(),
    );
    expect(answer).toEqual({
      id: '6f1c1f5e-5d5a-4c59-9c4e-0a8a4b0c2d11',
      bodyHash: 'hash-of-the-first-body',
      createdAt,
    });
  });

  it('a new key is claimed once: the second claim gets the first one’s record; another caller’s is its own', async () => {
    const now = Date.now();
    const record = { id: 'first', bodyHash: 'b', createdAt: new Date(now).toISOString() };
    expect(await keys.claimKey('caller-2', 'k', record, now)).toBe('claimed');
    expect(await keys.claimKey('caller-2', 'k', { ...record, id: 'second' }, now)).toEqual(record);
    expect(await keys.claimKey('imports-caller-2', 'k', { ...record, id: 'third' }, now)).toBe('claimed');
    // Released (the request could not start): the key is free again.
    await keys.releaseKey('caller-2', 'k');
    expect(await keys.claimKey('caller-2', 'k', { ...record, id: 'fourth' }, now)).toBe('claimed');
  });

  it('a key older than 24 hours is taken over by the next request', async () => {
    const then = Date.now() - 25 * 3600 * 1000;
    const old = { id: 'old', bodyHash: 'b', createdAt: new Date(then).toISOString() };
    expect(await keys.claimKey('caller-3', 'k', old, then)).toBe('claimed');
    const now = Date.now();
    expect(
      await keys.claimKey(
        'caller-3',
        'k',
        { ...old, id: 'new', createdAt: new Date(now).toISOString() },
        now,
      ),
    ).toBe('claimed');
  });
});
