import { nextOccurrence, nextOccurrences, parseNcrontab } from '../../shared/ncrontab';
import { compileRoute } from '../../devhost/routes';

const at = (iso: string) => Date.parse(iso);
const next = (expr: string, after: string) =>
  new Date(nextOccurrence(parseNcrontab(expr), at(after))).toISOString();

describe('NCRONTAB (six fields, UTC), as NCrontab reads it', () => {
  it.each([
    ['0 */15 * * * *', '2026-11-22T10:07:31Z', '2026-11-22T10:15:00.000Z'],
    ['*/5 * * * * *', '2026-11-22T10:07:31Z', '2026-11-22T10:07:35.000Z'],
    ['0 30 9 * * 1-5', '2026-11-21T10:00:00Z', '2026-11-23T09:30:00.000Z'], // Saturday → Monday
    ['0 0 0 1 JAN *', '2026-11-22T00:00:00Z', '2027-01-01T00:00:00.000Z'],
    ['0 0 12 * * SUN', '2026-11-22T11:00:00Z', '2026-11-22T12:00:00.000Z'],
    ['0 0 0 29 2 *', '2026-03-01T00:00:00Z', '2028-02-29T00:00:00.000Z'],
    // Day-of-month AND day-of-week: Friday the 13th (classic cron fired on 2026-11-27, a Friday).
    ['0 0 0 13 * 5', '2026-11-22T00:00:00Z', '2027-08-13T00:00:00.000Z'],
    // A leap day that is a Monday: 2044 (NCrontab looks as far as it must).
    ['0 0 0 29 2 1', '2026-01-01T00:00:00Z', '2044-02-29T00:00:00.000Z'],
  ])('%s after %s → %s', (expr, after, expected) => {
    expect(next(expr, after)).toBe(expected);
  });

  // NCrontab's own test cases (its CrontabScheduleTests' evaluations; five-field ones with a 0 second before them).
  it.each([
    ['2003-01-01T00:00:00Z', '0 * * * * *', '2003-01-01T00:01:00.000Z'],
    ['2003-01-01T23:59:00Z', '0 * * * * *', '2003-01-02T00:00:00.000Z'],
    ['2003-12-31T23:59:00Z', '0 * * * * *', '2004-01-01T00:00:00.000Z'],
    ['2003-02-28T23:59:00Z', '0 * * * * *', '2003-03-01T00:00:00.000Z'],
    ['2004-02-28T23:59:00Z', '0 * * * * *', '2004-02-29T00:00:00.000Z'],
    ['2003-01-01T00:00:00Z', '45 * * * * *', '2003-01-01T00:00:45.000Z'],
    ['2003-01-01T00:00:49Z', '45-47,48,49 * * * * *', '2003-01-01T00:01:45.000Z'],
    ['2003-01-01T00:00:57Z', '2/5 * * * * *', '2003-01-01T00:01:02.000Z'],
    ['2021-02-24T09:50:35Z', '* 0-1 10 * * *', '2021-02-24T10:00:00.000Z'],
    ['2003-01-01T00:49:00Z', '0 45-47,48,49 * * * *', '2003-01-01T01:45:00.000Z'],
    ['2003-01-01T00:57:00Z', '0 2/5 * * * *', '2003-01-01T01:02:00.000Z'],
    ['2021-02-24T09:50:35Z', '* * 10 * * *', '2021-02-24T10:00:00.000Z'],
    ['2021-02-24T09:50:35Z', '* 55 * * * *', '2021-02-24T09:55:00.000Z'],
    ['2003-01-01T00:49:30Z', '6 45-47,48,49 * * * *', '2003-01-01T01:45:06.000Z'],
    ['2003-01-01T00:57:30Z', '9 2/5 * * * *', '2003-01-01T01:02:09.000Z'],
    ['2003-12-20T10:00:00Z', '0 * 3/4 * * *', '2003-12-20T11:00:00.000Z'],
    ['2003-12-20T01:45:00Z', '0 30 3 * * *', '2003-12-20T03:30:00.000Z'],
    ['2003-01-07T00:00:00Z', '0 30 * 1 * *', '2003-02-01T00:30:00.000Z'],
    ['2003-01-01T00:00:00Z', '0 30 23 19 * *', '2003-01-19T23:30:00.000Z'],
    ['2003-07-10T00:00:00Z', '0 * * 30,31 * *', '2003-07-30T00:00:00.000Z'],
    ['2004-02-29T23:59:59Z', '0 * * * 3 *', '2004-03-01T00:00:00.000Z'],
    ['2000-01-31T00:00:00Z', '0 0 0 15,30,31 * *', '2000-02-15T00:00:00.000Z'],
    ['2000-04-30T00:00:00Z', '0 0 0 15,30,31 * *', '2000-05-15T00:00:00.000Z'],
    ['2000-12-31T00:00:00Z', '0 0 0 15,30,31 * *', '2001-01-15T00:00:00.000Z'],
    ['2003-12-01T05:00:00Z', '0 10 * * 6 *', '2004-06-01T00:10:00.000Z'],
    ['2003-01-04T00:00:00Z', '0 1 2 3 * *', '2003-02-03T02:01:00.000Z'],
    ['2002-07-01T05:00:00Z', '0 10 * * February,April-Jun *', '2003-02-01T00:10:00.000Z'],
    ['1988-09-11T14:23:00Z', '0 * 12 1 6 *', '1989-06-01T12:00:00.000Z'],
    ['1988-03-11T14:23:00Z', '0 * 2,4-8,15 * 6 *', '1988-06-01T02:00:00.000Z'],
    [
      '1988-03-11T14:23:00Z',
      '0 20 * * january,FeB,Mar,april,May,JuNE,July,Augu,SEPT-October,Nov,DECEM *',
      '1988-03-11T15:20:00.000Z',
    ],
    ['2003-06-26T10:00:00Z', '0 30 6 * * sunday', '2003-06-29T06:30:00.000Z'],
    ['2003-06-24T12:01:00Z', '0 1 12 * * 2', '2003-07-01T12:01:00.000Z'],
    ['2003-06-30T18:15:00Z', '0 15 18 * * Mon', '2003-07-07T18:15:00.000Z'],
    ['2003-01-01T00:00:00Z', '0 * * * * Mon', '2003-01-06T00:00:00.000Z'],
    ['2003-01-01T12:00:00Z', '0 45 16 1 * Mon', '2003-09-01T16:45:00.000Z'],
    ['2003-09-01T23:45:00Z', '0 45 16 1 * Mon', '2003-12-01T16:45:00.000Z'],
    ['2000-02-29T12:01:00Z', '0 1 12 29 2 *', '2004-02-29T12:01:00.000Z'],
    ['2004-02-29T12:01:00Z', '0 1 12 28 2 *', '2005-02-28T12:01:00.000Z'],
    ['2000-01-01T14:40:00Z', '0 40 14/1 * * *', '2000-01-01T15:40:00.000Z'],
  ])('NCrontab: after %s, %s → %s', (after, expr, expected) => {
    expect(next(expr, after)).toBe(expected);
  });

  it('is strictly after the given time; the next runs one after another', () => {
    expect(next('0 0 * * * *', '2026-11-22T10:00:00Z')).toBe('2026-11-22T11:00:00.000Z');
    expect(
      nextOccurrences(parseNcrontab('0 0 0 13 * FRI'), at('2026-01-01T00:00:00Z'), 3).map((t) =>
        new Date(t).toISOString(),
      ),
    ).toEqual(['2026-02-13T00:00:00.000Z', '2026-03-13T00:00:00.000Z', '2026-11-13T00:00:00.000Z']);
  });

  it('reads what NCrontab reads: reversed ranges, a step of 0, name prefixes', () => {
    expect([...parseNcrontab('0 5-1 * * * *').sets[1]]).toEqual([1, 2, 3, 4, 5]);
    expect(parseNcrontab('0 */0 * * * *').sets[1].size).toBe(60);
    expect([...parseNcrontab('0 0 0 * Ju,Augu *').sets[4]]).toEqual([6, 8]);
    expect([...parseNcrontab('0 0 0 * * t-th').sets[5]]).toEqual([2, 3, 4]);
  });

  it.each([
    ['*/5 * * * *', /six fields/],
    ['61 * * * * *', /second: 61 is out of range/],
    ['0 0 0 * * 7', /Sunday is 0/],
    ['0 0 0 * * 8', /out of range/],
    ['0 0 0 * Foo *', /not a known name/],
    ['0 0 0 1, * *', /an empty value/],
    ['0 */x * * * *', /bad step/],
  ])('rejects %s', (expr, message) => {
    expect(() => parseNcrontab(expr)).toThrow(message);
  });

  it('a schedule that never fires says so', () => {
    expect(() => nextOccurrence(parseNcrontab('0 0 0 30 2 *'), at('2026-01-01T00:00:00Z'))).toThrow(
      /never fires/,
    );
    expect(() => nextOccurrence(parseNcrontab('0 0 0 31 4 *'), at('2026-01-01T00:00:00Z'))).toThrow(
      /never fires/,
    );
  });
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
