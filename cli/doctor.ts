import { createAccessLayer } from '../shared/access';
import { doctorFailed, runDoctor, type Check } from '../shared/doctor/checks';
import { ConfigError } from '../shared/errors';
import { parse, type CommandHelp } from './args';
import { describeTarget, resolveTenant } from './context';

export const DOCTOR_HELP: CommandHelp = {
  usage: 'doctor [--json]',
  summary:
    'Checks the set-up, in order: configuration, secret store and the client secret, identity provider,\n' +
    'client credentials, GraphQL and the tenant name, the read-only credential, storage, the delegated\n' +
    'session, the sinks. Each check says ok, warn or fail, what it found, and the one action that fixes it.\n' +
    'The deployed app runs the same checks with its own identity at GET /api/manage/doctor.',
  options: [['--json', 'print {"ok", "checks": [{name, state, found, action}]} on stdout']],
  notes: 'Exit codes: 0 nothing failed (warnings allowed), 1 a check failed. Never prints a secret or token.',
};

const MARK = { ok: '✔', warn: '!', fail: '✖' } as const;

export async function doctorCommand(args: string[]): Promise<number> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  let checks: Check[];
  let close = async () => {};
  try {
    const target = await resolveTenant();
    close = target.close;
    if (!values.json) describeTarget(target);
    checks = await runDoctor(target.config, createAccessLayer(target.config));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    checks = [
      {
        name: 'configuration',
        state: 'fail',
        found: err.problems.join('; '),
        action: 'Fix each setting named; docs/configuration.md lists them all.',
      },
    ];
  } finally {
    await close();
  }
  const ok = !doctorFailed(checks);
  if (values.json) process.stdout.write(`${JSON.stringify({ ok, checks })}\n`);
  else {
    for (const c of checks)
      process.stdout.write(
        `${MARK[c.state]} ${c.name}: ${c.found}${c.action ? `\n    → ${c.action}` : ''}\n`,
      );
    process.stdout.write(ok ? '\nNothing failed.\n' : '\nSome checks failed: each says what fixes it.\n');
  }
  return ok ? 0 : 1;
}
