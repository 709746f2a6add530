import type { ErrorTable } from './text';

/** Set-up: what an operator fixes before the next run (settings, secrets, credentials, the admin's session). */
export const SETUP_ERRORS = {
  config_invalid: {
    title: 'Invalid configuration',
    action: 'Fix the setting named in the message; every bad setting is listed.',
    setup: true,
  },
  secret_not_found: {
    title: 'Secret not found',
    action: 'Set the secret: `tenant-integrations secrets set <name>` (or `az keyvault secret set`).',
    setup: true,
  },
  secret_store_unavailable: {
    title: 'Secret store unavailable',
    action:
      'Give the app’s identity Key Vault Secrets User on the vault, and check KEY_VAULT_URL; the next run retries.',
  },
  credential_rejected: {
    title: 'M2M credential rejected',
    action:
      'Store the credential’s current secret (`tenant-integrations secrets set`), or create a credential on the tenant’s API Credentials page.',
    setup: true,
  },
  admin_login_required: {
    title: 'An admin must sign in',
    action: 'Sign in again on the admin page (/api/manage) or with `tenant-integrations login`.',
    // A person signs in in a minute or two: a client that sends its request again asks no more often than this.
    retryAfterSeconds: 60,
  },
  catalog_invalid: {
    title: 'No usable catalog',
    action:
      'Run `tenant-integrations discover` to see what the tenant offers, and name streams with SYNC_STREAMS_FILE or SYNC_STREAMS.',
    setup: true,
  },
} as const satisfies ErrorTable;
