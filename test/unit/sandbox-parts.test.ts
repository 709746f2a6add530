import { normaliseUserCode } from '../../sandbox/idp/device';
import { Router } from '../../sandbox/http';
import { parseExpiryDate } from '../../sandbox/portal';

describe('sandbox parts', () => {
  it('normalises a typed user code', () => {
    expect(normaliseUserCode('bcdf 1234')).toBe('BCDF-1234');
    expect(normaliseUserCode('bcdf-1234')).toBe('BCDF-1234');
    expect(normaliseUserCode('xx')).toBe('XX');
  });

  it('an expiry date takes effect at 00:00 UTC that day; junk is rejected', () => {
    expect(parseExpiryDate('2027-03-01')).toBe(Date.UTC(2027, 2, 1));
    expect(parseExpiryDate('2027-13-01')).toBeUndefined();
    expect(parseExpiryDate('tomorrow')).toBeUndefined();
  });

  it('router: 405 for a static path with another method even when a pattern follows', () => {
    const r = new Router()
      .add('POST', '/graphql', 'graphql', () => ({ status: 200 }))
      .add('GET', '/:tenant', 'portal', () => ({ status: 200 }));
    expect(r.match('GET', '/graphql')).toEqual({ allowed: ['POST'] });
    expect(r.match('GET', '/acme')).toMatchObject({ params: { tenant: 'acme' } });
    expect(r.match('GET', '/a/b')).toBeUndefined();
  });
});
