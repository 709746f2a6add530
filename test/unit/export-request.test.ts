import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { guardedPost, refusedAddress, refusedCallbackUrl } from '../../shared/net/callback';
import { parseExportRequest, requestHash } from '../../shared/exports/request';
import { parseIdempotencyKey } from '../../shared/net/accepted';

const known = ['controls', 'users'];
const parse = (text: string, development = false) =>
  parseExportRequest(text, { knownStreams: known, development });

describe('export request body', () => {
  it('fills the defaults: every stream, NDJSON, no gzip', () => {
    expect(parse('')).toEqual({ ok: true, value: { streams: known, format: 'ndjson', gzip: false } });
  });

  it('the same request hashes the same however it is written; a different one does not', () => {
    const a = parse('{"streams":["users","users"],"format":"ndjson"}');
    const b = parse('{"gzip":false,"streams":["users"]}');
    const c = parse('{"streams":["users"],"gzip":true}');
    if (!a.ok || !b.ok || !c.ok) throw new Error('expected valid requests');
    expect(requestHash(a.value)).toBe(requestHash(b.value));
    expect(requestHash(a.value)).not.toBe(requestHash(c.value));
  });

  it('names every problem, unknown fields and streams included', () => {
    const r = parse('{"streams":[],"format":1,"callbackUrl":"http://x.example","colour":"red"}');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^streams: must name at least one/),
        expect.stringMatching(/^format: must be one of/),
        expect.stringMatching(/colour/),
      ]),
    );
    const unknown = parse('{"streams":["users","invoices"],"callbackUrl":"http://x.example"}');
    expect(unknown).toEqual({
      ok: false,
      problems: [
        'streams: unknown stream "invoices"; known: controls, users',
        'callbackUrl: must be an https URL',
      ],
    });
  });

  it('Idempotency-Key: visible ASCII, 1–255 characters', () => {
    expect(parseIdempotencyKey(null)).toEqual({ ok: true, value: undefined });
    expect(parseIdempotencyKey('order-42')).toEqual({ ok: true, value: 'order-42' });
    expect(parseIdempotencyKey('has space').ok).toBe(false);
    expect(parseIdempotencyKey('k'.repeat(256)).ok).toBe(false);
  });
});

describe('callback destinations', () => {
  it.each([
    ['169.254.169.254', true, /link-local/],
    ['::ffff:169.254.169.254', true, /link-local/],
    ['fe80::1', true, /link-local/],
    ['168.63.129.16', true, /metadata/],
    ['127.0.0.1', false, /loopback or private/],
    ['10.1.2.3', false, /loopback or private/],
    ['172.20.0.1', false, /loopback or private/],
    ['192.168.1.1', false, /loopback or private/],
    ['fd00::1', false, /loopback or private/],
    ['::1', false, /loopback or private/],
    // IPv6 forms that carry an IPv4 address are judged by it (IPv4-compatible, NAT64, 6to4).
    ['::a9fe:a9fe', true, /link-local/],
    ['64:ff9b::a9fe:a9fe', true, /link-local/],
    ['2002:a9fe:a9fe::1', true, /link-local/],
    ['::7f00:1', false, /loopback or private/],
    ['64:ff9b::a00:1', false, /loopback or private/],
    ['2002:c0a8:101::', false, /loopback or private/],
    ['198.18.0.1', true, /reserved/],
    ['198.19.255.254', true, /reserved/],
    ['192.0.0.170', true, /reserved/],
  ])('%s is refused (even in development: %s)', (address, always, why) => {
    expect(refusedAddress(address, { development: false })).toMatch(why);
    if (always) expect(refusedAddress(address, { development: true })).toMatch(why);
    else expect(refusedAddress(address, { development: true })).toBeUndefined();
  });

  it('public addresses are allowed', () => {
    expect(refusedAddress('20.50.2.1', { development: false })).toBeUndefined();
    expect(refusedAddress('2606:4700::1111', { development: false })).toBeUndefined();
    expect(refusedAddress('64:ff9b::808:808', { development: false })).toBeUndefined(); // NAT64 of 8.8.8.8
    expect(refusedAddress('2002:808:808::1', { development: false })).toBeUndefined();
  });

  it('URLs: https only, no credentials, literal and local names checked', () => {
    const prod = { development: false };
    expect(refusedCallbackUrl('https://hooks.example.com/x', prod)).toBeUndefined();
    expect(refusedCallbackUrl('http://hooks.example.com/x', prod)).toBe('must be an https URL');
    expect(refusedCallbackUrl('https://u:p@hooks.example.com/x', prod)).toMatch(/user name or password/);
    expect(refusedCallbackUrl('https://[fe80::1]/x', { development: true })).toMatch(/link-local/);
    expect(refusedCallbackUrl('https://localhost/x', prod)).toMatch(/local name/);
    // A trailing dot only says "fully qualified": the same local names.
    expect(refusedCallbackUrl('https://localhost./x', prod)).toMatch(/local name/);
    expect(refusedCallbackUrl('https://box.internal../x', prod)).toMatch(/local name/);
    expect(refusedCallbackUrl('https://[::127.0.0.1]/x', prod)).toMatch(/loopback or private/);
    expect(refusedCallbackUrl('https://[64:ff9b::169.254.169.254]/x', { development: true })).toMatch(
      /link-local/,
    );
    expect(refusedCallbackUrl('https://localhost/x', { development: true })).toBeUndefined();
    expect(refusedCallbackUrl('nonsense', prod)).toBe('is not a URL');
  });

  it('a name that resolves to a refused address is stopped when connecting, before any byte is sent', async () => {
    let reached = 0;
    const server = createServer(() => reached++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    try {
      // `localhost` passes the URL check in development only; outside it, the lookup refuses 127.0.0.1.
      await expect(
        guardedPost({ development: false })(`https://localhost:${port}/hook`, '{}', {}),
      ).rejects.toMatchObject({
        code: 'upstream_rejected',
        message: expect.stringMatching(/loopback or private/),
      });
      await expect(
        guardedPost({ development: false })(`https://127.0.0.1:${port}/hook`, '{}', {}),
      ).rejects.toMatchObject({ code: 'upstream_rejected' });
      expect(reached).toBe(0);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
