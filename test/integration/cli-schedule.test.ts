import { runCli } from '../helpers/cli';

/** `tenant-integrations schedule`, as built: NCrontab's meaning, the same answer the timers and the hook use. */
describe('tenant-integrations schedule', () => {
  it('prints the next runs in UTC ISO 8601, one a line: "0 0 0 13 * 5" is Friday the 13th', async () => {
    const r = await runCli(['schedule', '0 0 0 13 * 5', '--from', '2026-11-26T00:00:00Z', '--count', '3']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toBe('2027-08-13T00:00:00.000Z\n2028-10-13T00:00:00.000Z\n2029-04-13T00:00:00.000Z\n');
    const five = await runCli(['schedule', '0 */15 * * * *', '--from', '2026-11-26T10:07:00Z']);
    expect(five.stdout.trim().split('\n')).toEqual([
      '2026-11-26T10:15:00.000Z',
      '2026-11-26T10:30:00.000Z',
      '2026-11-26T10:45:00.000Z',
      '2026-11-26T11:00:00.000Z',
      '2026-11-26T11:15:00.000Z',
    ]);
  });

  it.each([
    [['schedule', '0 0 0 * * 7'], /Sunday is 0/],
    [['schedule', '*/5 * * * *'], /six fields/],
    [['schedule', '0 0 0 30 2 *'], /never fires/],
    [['schedule'], /give one schedule/],
    [['schedule', '0 * * * * *', '--count', '0'], /--count must be/],
    [['schedule', '0 * * * * *', '--from', 'yesterday'], /--from: "yesterday" is not/],
  ])('%j: exit 2 naming what is wrong', async (args, message) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });
});
