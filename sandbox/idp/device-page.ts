import { randomBytes } from 'node:crypto';
import { escapeHtml, html, readForm, type Request, type Router } from '../http';
import { errorLine, field, page } from '../pages';
import type { Sandbox } from '../state';
import { normaliseUserCode } from './device';
import { authenticatePerson, personById } from './people';

/** Step two of the device page: a logged-in person confirms or denies. Short-lived, one use. */
interface Approval {
  userCode: string;
  userId: string;
  expiresAt: number;
}
const APPROVAL_LIFETIME_MS = 5 * 60_000;

function loginForm(action: string, userCode: string, error?: string) {
  return page(
    'Device login',
    `<h1>Device login</h1>
<p>Enter the code shown on your device and sign in to connect it to your account.</p>
${errorLine(error)}
<form method="post" action="${escapeHtml(action)}">
${field('user_code', 'Code from your device', { value: userCode, required: true, autocomplete: 'off' })}
${field('username', 'Username', { required: true, autocomplete: 'username' })}
${field('password', 'Password', { type: 'password', required: true, autocomplete: 'current-password' })}
<button type="submit">Sign in</button>
</form>`,
  );
}

export function registerDevicePage(router: Router, sb: Sandbox): void {
  const approvals = new Map<string, Approval>();
  const path = '/auth/realms/:tenant/device';
  const action = () => `${new URL(sb.realmUrl()).pathname}/device`;

  router.add('GET', path, 'device-page', (req) => {
    sb.realm(req);
    return html(200, loginForm(action(), normaliseUserCode(req.query.get('user_code') ?? '')));
  });

  router.add('POST', path, 'device-page', async (req: Request) => {
    sb.realm(req);
    const form = await readForm(req);
    const userCode = normaliseUserCode(form.get('user_code') ?? '');
    const grant = sb.devices.pendingByUserCode(userCode);
    if (!grant)
      return html(
        400,
        loginForm(action(), userCode, 'That code is not valid or has expired. Start again on your device.'),
      );
    const person = authenticatePerson(form.get('username') ?? '', form.get('password') ?? '');
    if (!person) return html(401, loginForm(action(), userCode, 'Invalid username or password.'));
    if (sb.disabledPeople.has(person.id))
      return html(401, loginForm(action(), userCode, 'Account is disabled, contact your administrator.'));
    const id = randomBytes(24).toString('base64url');
    approvals.set(id, { userCode, userId: person.id, expiresAt: sb.clock.now() + APPROVAL_LIFETIME_MS });
    return html(
      200,
      page(
        'Grant access',
        `<h1>Grant access to your account?</h1>
<p>Signed in as <strong>${escapeHtml(person.name)}</strong> (${escapeHtml(person.username)}).</p>
<p>The device with code <strong>${escapeHtml(userCode)}</strong> asks to act as you, with your permissions.</p>
<form method="post" action="${escapeHtml(action())}/consent">
<input type="hidden" name="approval" value="${id}">
<button type="submit" name="decision" value="approve">Yes, grant access</button>
<button type="submit" name="decision" value="deny" class="secondary">No, deny</button>
</form>`,
      ),
    );
  });

  router.add('POST', `${path}/consent`, 'device-page', async (req) => {
    sb.realm(req);
    const form = await readForm(req);
    const id = form.get('approval') ?? '';
    const approval = approvals.get(id);
    approvals.delete(id);
    const grant =
      approval && approval.expiresAt > sb.clock.now()
        ? sb.devices.pendingByUserCode(approval.userCode)
        : undefined;
    if (!approval || !grant || !personById(approval.userId)) {
      return html(
        400,
        page(
          'Device login',
          `<h1>Device login</h1>${errorLine('This request has expired. Start again on your device.')}`,
        ),
      );
    }
    if (form.get('decision') === 'approve') {
      sb.devices.approve(grant, approval.userId);
      return html(
        200,
        page(
          'Device connected',
          '<h1>Device connected</h1><p role="status">You can close this window and return to your device.</p>',
        ),
      );
    }
    sb.devices.deny(grant);
    return html(
      200,
      page(
        'Access denied',
        '<h1>Access denied</h1><p role="status">The device was not given access. You can close this window.</p>',
      ),
    );
  });
}
