import { nextOccurrence, parseNcrontab } from '../../shared/ncrontab';
import { compileRoute } from '../../devhost/routes';

const at = (iso: string) => Date.parse(iso);
const next = (expr: string, after: string) =>
  new Date(nextOccurrence(parseNcrontab(expr), at(after))).toISOString();

describe('NCRONTAB (six fields, UTC)', () => {
  it.each([
    ['0 */15 * * * *', '2026-11-22T10:07:31Z', '2026-11-22T10:15:00.000Z'],
    ['*/5 * * * * *', '2026-11-22T10:07:31Z', '2026-11-22T10:07:35.000Z'],
    ['0 30 9 * * 1-5', '2026-11-21T10:00:00Z', '2026-11-23T09:30:00.000Z'], // Saturday → Monday
    ['0 0 0 1 JAN *', '2026-11-22T00:00:00Z', '2027-01-01T00:00:00.000Z'],
    ['0 0 12 * * SUN', '2026-11-22T11:00:00Z', '2026-11-22T12:00:00.000Z'],
    ['0 0 0 29 2 *', '2026-03-01T00:00:00Z', '2028-02-29T00:00:00.000Z'],
    ['0 0 0 13 * 5', '2026-11-22T00:00:00Z', '2026-11-27T00:00:00.000Z'], // day 13 OR Friday
  ])('%s after %s → %s', (expr, after, expected) => {
    expect(next(expr, after)).toBe(expected);
  });

  it('is strictly after the given time', () => {
    expect(next('0 0 * * * *', '2026-11-22T10:00:00Z')).toBe('2026-11-22T11:00:00.000Z');
  });

  it.each([['*/5 * * * *'], ['61 * * * * *'], ['0 0 0 * * 8'], ['0 5-1 * * * *'], ['0 */0 * * * *']])(
    'rejects %s',
    (expr) => {
      expect(() => parseNcrontab(expr)).toThrow();
    },
  );
});

describe('route templates', () => {
  it('match parameters, optional and catch-all segments', () => {
    expect(compileRoute('exports/{id}').exec('/exports/abc')?.groups).toEqual({ id: 'abc' });
    expect(compileRoute('exports/{id:guid}').exec('/exports/abc')?.groups?.id).toBe('abc');
    expect(compileRoute('echo/{id?}').exec('/echo')).not.toBeNull();
    expect(compileRoute('files/{*rest}').exec('/files/a/b/c')?.groups?.rest).toBe('a/b/c');
    expect(compileRoute('exports').exec('/exports/x')).toBeNull();
  });
});
