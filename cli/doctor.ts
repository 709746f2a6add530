import { createAccessLayer } from '../shared/access';
import { FEATURE_CHECKS } from '../shared/app';
import { doctorFailed, runDoctor, type Check } from '../shared/doctor';
import { ConfigError } from '../shared/errors';
import { parse } from './args';
import { describeTarget, resolveTenant } from './context';

const MARK = { ok: '✔', warn: '!', fail: '✖' } as const;

export async function doctorCommand(args: string[]): Promise<number> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  let checks: Check[];
  let close = async () => {};
  try {
    const target = await resolveTenant();
    close = target.close;
    if (!values.json) describeTarget(target);
    checks = await runDoctor(target.config, createAccessLayer(target.config), {
      embeddedSandbox: target.source === 'embedded',
      localSandbox: target.source !== 'configured',
      checks: FEATURE_CHECKS,
    });
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
