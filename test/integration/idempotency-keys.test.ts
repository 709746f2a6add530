import { createHash } from 'node:crypto';
import { TableClient } from '@azure/data-tables';
import { startAzurite, type RunningAzurite } from '../../cli/azurite';
import { claimOrReplay, STALE_CLAIM_MS } from '../../shared/net/accepted';
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

describe('a claim whose request never started (its starter died between the claim and the start)', () => {
  const replayNone = async () => undefined;
  const started = new Set<string>();
  const replay = async (id: string) => (started.has(id) ? { status: 202, jsonBody: { id } } : undefined);

  it('answers 409 with Retry-After for its first minute, then is taken over by the next request with it', async () => {
    const t0 = Date.now() - 30_000;
    const dead = { id: 'never-started', bodyHash: 'b', createdAt: new Date(t0).toISOString() };
    expect(await keys.claimKey('caller-4', 'k', dead, t0)).toBe('claimed');
    const now = Date.now();
    const next = { id: 'next', bodyHash: 'b', createdAt: new Date(now).toISOString() };
    const early = await claimOrReplay(keys, 'caller-4', 'k', next, now, {
      noun: 'import',
      replay: replayNone,
    });
    expect(early).toMatchObject({ status: 409, headers: { 'retry-after': '1' } });
    // A minute after the claim, nothing started: the key is free for this request.
    const later = now + STALE_CLAIM_MS;
    const taken = { ...next, createdAt: new Date(later).toISOString() };
    expect(
      await claimOrReplay(keys, 'caller-4', 'k', taken, later, { noun: 'import', replay: replayNone }),
    ).toBe('claimed');
    expect(await keys.findKey('caller-4', 'k', later)).toEqual(taken);
  });

  it('two requests taking over the same stale claim: one wins, the other replays what the winner started', async () => {
    const t0 = Date.now() - 120_000;
    const dead = { id: 'dead', bodyHash: 'b', createdAt: new Date(t0).toISOString() };
    expect(await keys.claimKey('caller-5', 'k', dead, t0)).toBe('claimed');
    const now = Date.now();
    const a = { id: 'a', bodyHash: 'b', createdAt: new Date(now).toISOString() };
    const b = { id: 'b', bodyHash: 'b', createdAt: new Date(now + 1).toISOString() };
    const [first, second] = await Promise.all([
      keys.reclaimKey('caller-5', 'k', a, dead),
      keys.reclaimKey('caller-5', 'k', b, dead),
    ]);
    const answers = [first, second];
    expect(answers.filter((x) => x === 'claimed')).toHaveLength(1);
    const winner = first === 'claimed' ? a : b;
    expect(answers.find((x) => x !== 'claimed')).toEqual(winner);
    // Through claimOrReplay: once the winner has started, a late one replays it rather than claiming.
    started.add(winner.id);
    const late = { id: 'late', bodyHash: 'b', createdAt: new Date(now + 2).toISOString() };
    expect(await claimOrReplay(keys, 'caller-5', 'k', late, now + 2, { noun: 'import', replay })).toEqual({
      status: 202,
      jsonBody: { id: winner.id },
    });
  });

  it('findKey: the record a key names, none for an unknown or expired one', async () => {
    const now = Date.now();
    const record = { id: 'found', bodyHash: 'h', createdAt: new Date(now).toISOString() };
    expect(await keys.claimKey('caller-6', 'k', record, now)).toBe('claimed');
    expect(await keys.findKey('caller-6', 'k', now)).toEqual(record);
    expect(await keys.findKey('caller-6', 'other', now)).toBeUndefined();
    expect(await keys.findKey('caller-6', 'k', now + 25 * 3600 * 1000)).toBeUndefined();
  });
});
