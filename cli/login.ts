import QRCode from 'qrcode';
import { createAccessLayer } from '../shared/access';
import { runDeviceFlow } from '../shared/device-login/terminal';
import type { DeviceFlowState } from '../shared/device-login/flow';
import { requestDeviceCode } from '../shared/device-login/idp';
import { tenantEndpoints } from '../shared/auth/endpoints';
import { systemClock, type Clock } from '../shared/clock';
import { parse } from './args';
import { describeTarget, resolveTenant } from './context';

/** Exit codes scripts can rely on. */
export const LOGIN_EXIT = {
  authorised: 0,
  failed: 1,
  usage: 2,
  denied: 3,
  expired: 4,
  cancelled: 130,
} as const;

export interface LoginIo {
  clock?: Clock;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  abortSignal?: AbortSignal;
  stdout?: { write(s: string): unknown };
  stderr?: { write(s: string): unknown; isTTY?: boolean };
  cwd?: string;
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const mmss = (ms: number) => {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
};

/** `tenant-integrations login`: the admin device login in a terminal, with the same rules as the app's. */
export async function loginCommand(args: string[], io: LoginIo = {}): Promise<number> {
  const { values } = parse(args, { 'no-qr': { type: 'boolean' }, json: { type: 'boolean' } });
  const out = io.stdout ?? process.stdout;
  const err = io.stderr ?? process.stderr;
  const clock = io.clock ?? systemClock;
  const tty = Boolean(err.isTTY);
  const abort = new AbortController();
  const onSigint = () => abort.abort(new Error('cancelled'));
  if (!io.abortSignal) process.once('SIGINT', onSigint);
  io.abortSignal?.addEventListener('abort', onSigint, { once: true });

  const target = await resolveTenant(io.cwd);
  let spinner: NodeJS.Timeout | undefined;
  try {
    const { config } = target;
    describeTarget(target, err);
    const endpoints = tenantEndpoints(config.tenant);
    let code;
    try {
      code = await requestDeviceCode(endpoints, { abortSignal: abort.signal });
    } catch (e) {
      if (abort.signal.aborted) return await finish({ status: 'cancelled', polls: 0 });
      throw e;
    }
    const link = code.verificationUriComplete ?? code.verificationUri;
    const expiresAt = clock.now() + code.expiresInSeconds * 1000;
    if (values.json)
      out.write(
        `${JSON.stringify({ state: 'waiting', userCode: code.userCode, verificationUri: code.verificationUri, verificationUriComplete: link, expiresAt: new Date(expiresAt).toISOString() })}\n`,
      );
    err.write(`Open this link on any device and sign in as the admin:\n\n    ${link}\n\n`);
    err.write(`Check that the page shows this code:\n\n    ${code.userCode}\n\n`);
    // A QR code is for eyes on a terminal: never for a redirected stderr or a script (--json).
    if (!values['no-qr'] && !values.json && tty)
      err.write(`${await QRCode.toString(link, { type: 'terminal', small: true })}\n`);

    let latest: DeviceFlowState | undefined;
    let frame = 0;
    const line = () => {
      if (latest?.status !== 'waiting') return '';
      const every = latest.intervalSeconds;
      return `${SPINNER[frame++ % SPINNER.length]} Waiting for you to sign in… ${mmss(latest.expiresAt - clock.now())} left (checked ${latest.polls}×, every ${every} s)`;
    };
    if (tty) spinner = setInterval(() => err.write(`\r\x1b[K${line()}`), 100);
    let lastInterval = 0;
    const { state, tokens } = await runDeviceFlow(endpoints, code, {
      clock,
      sleep: io.sleep,
      abortSignal: abort.signal,
      onState: (s) => {
        latest = s;
        // Without a terminal, one line when something changes instead of a spinner.
        if (!tty && s.status === 'waiting' && s.intervalSeconds !== lastInterval) {
          if (lastInterval)
            err.write(`The service asked us to slow down: checking every ${s.intervalSeconds} s.\n`);
          else err.write(`Waiting for you to sign in (checking every ${s.intervalSeconds} s)…\n`);
          lastInterval = s.intervalSeconds;
        }
      },
    });
    if (spinner) {
      clearInterval(spinner);
      spinner = undefined;
      err.write('\r\x1b[K');
    }
    return await finish(
      state,
      tokens ? () => createAccessLayer(config, { clock }).delegated.connect(tokens) : undefined,
    );
  } finally {
    if (spinner) clearInterval(spinner);
    process.removeListener('SIGINT', onSigint);
    await target.close();
  }

  async function finish(
    state: DeviceFlowState,
    connect?: () => Promise<{ username: string; name?: string }>,
  ): Promise<number> {
    const report = (o: Record<string, unknown>) => values.json && out.write(`${JSON.stringify(o)}\n`);
    switch (state.status) {
      case 'authorised': {
        const who = await (connect as NonNullable<typeof connect>)();
        const where = target.config.keyVaultSessionsUrl
          ? `Key Vault ${target.config.keyVaultSessionsUrl}`
          : `the local secret file ${target.config.localSecretsFile}`;
        err.write(`✔ Signed in as ${who.name ? `${who.name} (${who.username})` : who.username}.\n`);
        err.write(
          target.source === 'embedded'
            ? `  The delegated session is stored in ${where}, but the embedded sandbox stops now and the session\n` +
                '  with it. Run `npm start` and log in there (or set TENANT_*) for a session the app keeps alive.\n'
            : `  The delegated session is stored in ${where}; the app's keeper keeps it alive.\n`,
        );
        report({ state: 'authorised', username: who.username, name: who.name });
        return LOGIN_EXIT.authorised;
      }
      case 'denied':
        err.write(
          '✖ The login was denied on the device page. Run `tenant-integrations login` to try again.\n',
        );
        report({ state: 'denied' });
        return LOGIN_EXIT.denied;
      case 'expired':
        err.write(
          '✖ The code expired before anyone signed in. Run `tenant-integrations login` for a new one.\n',
        );
        report({ state: 'expired' });
        return LOGIN_EXIT.expired;
      case 'cancelled':
        err.write('Login cancelled.\n');
        report({ state: 'cancelled' });
        return LOGIN_EXIT.cancelled;
      case 'failed': {
        const why = state.description ? `${state.error}: ${state.description}` : state.error;
        err.write(
          `✖ The login failed (${why}). Check the tenant settings, then run \`tenant-integrations login\` again.\n`,
        );
        report({ state: 'failed', error: why });
        return LOGIN_EXIT.failed;
      }
      default:
        return LOGIN_EXIT.failed;
    }
  }
}
