import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unmarkedPersonal, withPersonalPolicy } from '../../shared/catalog/personal';
import { personalFields } from '../../shared/personal/fields';
import { hmacHasher, protector, resolvePersonal } from '../../shared/personal/policy';
import { LocalFileSecretStore } from '../../shared/secrets';
import { hashKeyOf } from '../../shared/secrets/hash-key';
import { parseStreams, type StreamDefinition } from '../../shared/streams';

const stream = (over: Record<string, unknown>): StreamDefinition =>
  parseStreams(
    {
      streams: [
        {
          name: 'people',
          pagination: 'none',
          document: 'query Sync_people { people { id name email phones owner { id name email } tags } }',
          paths: { records: 'people' },
          ...over,
        },
      ],
    },
    'test',
  )[0];

describe('personal fields found by name where they stand', () => {
  const kinds = (leaves: string[], record = ['things']) =>
    Object.fromEntries(personalFields(leaves, record).map((f) => [f.field, f.kind]));

  it('marks addresses, phones, names, numbers and dates of birth, nested ones too', () => {
    expect(
      kinds([
        'id',
        'workEmail',
        'e_mail',
        'emails',
        'mobilePhone',
        'phone_number',
        'given_name',
        'surname',
        'dateOfBirth',
        'iban',
        'lastLoginIp',
        'employee_id',
        'postalCode',
        'contact.emailAddress',
        'title',
        'isMobile',
        'headphones',
      ]),
    ).toEqual({
      workEmail: 'e-mail address',
      e_mail: 'e-mail address',
      emails: 'e-mail address',
      mobilePhone: 'phone number',
      phone_number: 'phone number',
      given_name: 'name',
      surname: 'name',
      dateOfBirth: 'date of birth',
      iban: 'bank account or card',
      lastLoginIp: 'IP address',
      employee_id: 'employee number',
      postalCode: 'postal address',
      'contact.emailAddress': 'e-mail address',
    });
  });

  it("a bare name is a person's only in a person's record", () => {
    // A KPI's or a control's name is not personal; a user's, an owner's and an uploader's are.
    expect(kinds(['id', 'name', 'unit'], ['kpis', 'Kpi'])).toEqual({});
    expect(kinds(['id', 'name', 'title'], ['controls', 'Control'])).toEqual({});
    expect(kinds(['id', 'name'], ['users', 'User'])).toEqual({ name: 'name' });
    expect(kinds(['owner.id', 'owner.name', 'uploadedBy.name', 'framework.name'])).toEqual({
      'owner.name': 'name',
      'uploadedBy.name': 'name',
    });
    // Beside an e-mail address, whatever the record is called.
    expect(kinds(['id', 'name', 'email'], ['things'])).toEqual({ name: 'name', email: 'e-mail address' });
  });

  it("a custom scalar's name says it too; a key is never marked", () => {
    const scalars: Record<string, string> = { contact: 'EmailAddress', ip: 'IPv4', id: 'EmailAddress' };
    expect(
      personalFields(['id', 'contact', 'ip', 'note'], ['things'], {
        scalarOf: (f) => scalars[f],
        except: ['id'],
      }),
    ).toEqual([
      { field: 'contact', kind: 'e-mail address' },
      { field: 'ip', kind: 'IP address' },
    ]);
  });
});

describe('the policy, applied to a page', () => {
  const hasher = hmacHasher(Buffer.alloc(32, 7));

  it('hashes an address alike whatever its case, each list item, leaves null as null', () => {
    const s = resolvePersonal(
      [stream({ personal: { email: 'default', phones: 'hash', 'owner.email': 'hash', name: 'keep' } })],
      'hash',
    )[0];
    const protect = protector(s, hasher);
    const [a, b] = protect?.([
      {
        id: 1,
        name: 'Anna',
        email: 'Anna.Bos@Example.org ',
        phones: ['+31 6 1', null],
        owner: { email: 'anna.bos@example.org' },
      },
      { id: 2, name: 'Bram', email: null, phones: null, owner: [{ email: 'x@y.z' }, { name: 'n' }] },
    ]) as [
      { email: string; name: string; phones: Array<string | null>; owner: { email: string } },
      { email: null; phones: null; owner: Array<Record<string, string>> },
    ];
    expect(a.email).toMatch(/^h:[0-9a-f]{32}$/);
    expect(a.email).toBe(a.owner.email);
    expect(a.name).toBe('Anna');
    expect(a.phones[0]).toMatch(/^h:/);
    expect(a.phones[1]).toBeNull();
    expect(b.email).toBeNull();
    expect(b.phones).toBeNull();
    expect(b.owner[0].email).toBe(hasher.hash('x@y.z'));
    expect(b.owner[1]).toEqual({ name: 'n' });
    // Another key, another hash: the key is what makes it unguessable.
    expect(hmacHasher(Buffer.alloc(32, 8)).hash('x@y.z')).not.toBe(hasher.hash('x@y.z'));
  });

  it('drops a field from the page, and from the document the tenant is asked', () => {
    const s = withPersonalPolicy(
      [stream({ personal: { email: 'default', 'owner.name': 'drop' } })],
      'drop',
    )[0];
    expect(s.personal).toEqual({ email: 'drop', 'owner.name': 'drop' });
    expect(s.document).not.toMatch(/\bemail\b(?![^{]*})/);
    expect(s.document).toMatch(/owner \{\s*id\s+email\s*\}/);
    const [r] = protector(
      s,
      undefined,
    )?.([{ id: 1, email: 'a@b.c', owner: { id: 2, name: 'N', email: 'c@d.e' } }]) as Array<
      Record<string, unknown>
    >;
    expect(r).toEqual({ id: 1, owner: { id: 2, email: 'c@d.e' } });
  });

  it('an object left with nothing to select is not asked at all', () => {
    const s = withPersonalPolicy(
      [
        stream({
          document: 'query Sync_people { people { id owner { name } } }',
          personal: { 'owner.name': 'drop' },
        }),
      ],
      'hash',
    )[0];
    expect(s.document).not.toMatch(/owner/);
    // Were the tenant to send it anyway, the page drops it.
    expect(protector(s, undefined)?.([{ id: 1, owner: { name: 'N' } }])).toEqual([{ id: 1, owner: {} }]);
  });

  it('keep, or nothing marked, leaves the page as it came; hashing without a key fails before the first page', () => {
    expect(protector(stream({}), undefined)).toBeUndefined();
    expect(protector(stream({ personal: { email: 'keep' } }), undefined)).toBeUndefined();
    expect(() => protector(stream({ personal: { email: 'hash' } }), undefined)).toThrow(
      /stream people hashes personal data but no hash key was given: set SYNC_HASH_SECRET_NAME/,
    );
  });

  it('a policy on the key or the incremental field is refused, naming both and the fix', () => {
    expect(() => stream({ personal: { id: 'drop' } })).toThrow(
      /stream people: personal\.id: id is the key: it cannot be dropped — set it to "keep"/,
    );
    expect(() => stream({ idPath: 'email', personal: { email: 'default' } })).toThrow(/email is the key/);
    expect(stream({ personal: { id: 'keep' } }).personal).toEqual({ id: 'keep' });
  });
});

describe('the keyed hash', () => {
  it('is HMAC-SHA-256 as Node makes it, for short, block-sized and long keys, any text, again from memory', () => {
    for (const key of [Buffer.alloc(32, 7), Buffer.alloc(64, 1), Buffer.alloc(100, 9)]) {
      const h = hmacHasher(key);
      for (const v of ['', 'a@b.c', 'Anna Bos', 'é漢字🙂', 'x'.repeat(10_000)]) {
        const want = `h:${createHmac('sha256', key).update(v, 'utf8').digest('hex').slice(0, 32)}`;
        expect([v.slice(0, 10), h.hash(v)]).toEqual([v.slice(0, 10), want]);
        expect(h.hash(v)).toBe(want);
      }
    }
  });
});

describe('a catalog without marks', () => {
  it('names the fields that look personal and have no policy, nested ones too — not those it has', () => {
    expect(unmarkedPersonal(stream({})).map((f) => `${f.field} (${f.kind})`)).toEqual([
      'name (name)',
      'email (e-mail address)',
      'phones (phone number)',
      'owner.name (name)',
      'owner.email (e-mail address)',
    ]);
    expect(
      unmarkedPersonal(stream({ personal: { name: 'keep', email: 'hash', 'owner.name': 'drop' } })).map(
        (f) => f.field,
      ),
    ).toEqual(['phones', 'owner.email']);
  });
});

describe('the hash key', () => {
  let dir: string;
  beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), 'ti-hash-key-'))));
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('is made on first use, then read: the same key in every process after', async () => {
    const store = new LocalFileSecretStore(join(dir, 'secrets.json'));
    const first = await hashKeyOf(store, 'sync-hash-key')();
    expect(Buffer.from(await store.get('sync-hash-key'), 'base64')).toHaveLength(32);
    const again = await hashKeyOf(new LocalFileSecretStore(join(dir, 'secrets.json')), 'sync-hash-key')();
    expect(again.hash('a@b.c')).toBe(first.hash('a@b.c'));
  });

  it('a key too short is refused; a failed read is asked again, not kept', async () => {
    const store = new LocalFileSecretStore(join(dir, 'secrets.json'));
    await store.set('k', Buffer.alloc(8).toString('base64'));
    await expect(hashKeyOf(store, 'k')()).rejects.toThrow(/fewer than 16 bytes/);
    let calls = 0;
    const failing = {
      description: 'failing',
      get: async () => {
        calls++;
        if (calls === 1) throw new Error('vault down');
        return Buffer.alloc(32, 1).toString('base64');
      },
      set: async () => undefined,
      delete: async () => undefined,
    };
    const key = hashKeyOf(failing, 'k');
    await expect(key()).rejects.toThrow('vault down');
    expect((await key()).hash('x')).toMatch(/^h:/);
  });
});
