import type { ErrorCode } from './codes';
import { bounded } from './text';

/** Azure Storage's refusals of one more block for a blob (append blobs, and block lists past 50 000). */
const BLOCK_LIMIT_CODES = new Set(['BlockCountExceedsLimit', 'BlockListTooLong']);

/**
 * The code of any error: its own when it is one of ours; for an Azure Storage refusal `storage_block_limit` when a
 * blob is full (retrying cannot help), else `storage_unavailable`.
 */
export const codeOf = (err: unknown): ErrorCode => {
  if (err instanceof IntegrationError) return err.code;
  const e = err as { name?: unknown; code?: unknown } | undefined;
  if (e?.name !== 'RestError') return 'unexpected';
  return typeof e.code === 'string' && BLOCK_LIMIT_CODES.has(e.code)
    ? 'storage_block_limit'
    : 'storage_unavailable';
};

/** The HTTP status a storage SDK's error (a RestError) carries: 404, 409, 412 are answers a caller expects. */
export const statusOf = (err: unknown): number | undefined => (err as { statusCode?: number }).statusCode;

/**
 * The few error classes of the app. Each has a stable `code`, the HTTP status where one fits, and keeps
 * its `cause`. Messages say what to do and never carry a token or secret.
 */
export class IntegrationError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options: { status?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = new.target.name;
    this.status = options.status;
  }
  readonly status?: number;
}

/** Configuration or a definition file is invalid; lists every bad setting. */
export class ConfigError extends IntegrationError {
  constructor(
    readonly problems: string[],
    source = 'configuration',
  ) {
    super('config_invalid', `Invalid ${source}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** A secret the app needs is not in the store. */
export class SecretNotFound extends IntegrationError {
  constructor(
    readonly secretName: string,
    where: string,
  ) {
    super(
      'secret_not_found',
      `Secret "${secretName}" is not in ${where}. Set it with \`tenant-integrations secrets set ${secretName}\`` +
        ` (reads the value from stdin) or \`az keyvault secret set --vault-name <vault> --name ${secretName} --file <file>\`.`,
      { status: 500 },
    );
  }
}

/** The secret store could not be reached or answered an error. */
export class SecretStoreError extends IntegrationError {
  constructor(message: string, cause?: unknown) {
    super('secret_store_unavailable', message, { status: 503, cause });
  }
}

/** The IdP refused the M2M credential itself: revoked, disabled, expired or a wrong secret. */
export class CredentialRejected extends IntegrationError {
  constructor(
    readonly clientId: string,
    readonly oauthError: string,
    options: { cause?: unknown; retryAfterMs?: number } = {},
  ) {
    super(
      'credential_rejected',
      `The identity provider rejected M2M credential "${clientId}" (${oauthError}). It was re-read from the secret store` +
        ' and still failed: the credential is revoked, expired or its secret is wrong. In the portal go to Settings →' +
        ' API Credentials, rotate the credential (or create a new one), then store the new secret with' +
        ' `tenant-integrations secrets set <TENANT_CLIENT_SECRET_NAME>` or `az keyvault secret set`.',
      { status: 401, cause: options.cause },
    );
    this.retryAfterMs = options.retryAfterMs;
  }
  /** How long callers are failed fast before the IdP is asked again. */
  readonly retryAfterMs?: number;
}

/** The delegated session cannot be refreshed: an admin must run the device login again. */
export class LoginRequired extends IntegrationError {
  constructor(reason: string, options: { cause?: unknown } = {}) {
    super(
      'admin_login_required',
      `The delegated session needs a new login (${reason}). Open the admin page (/api/manage) and start a device login, or run \`tenant-integrations login\`.`,
      { status: 401, cause: options.cause },
    );
  }
}

/** An upstream endpoint failed, answered something malformed, or refused the request for good. */
export class UpstreamError extends IntegrationError {
  constructor(
    code:
      | 'upstream_unavailable'
      | 'upstream_malformed'
      | 'upstream_rejected'
      | 'upstream_timeout'
      | 'tenant_limit',
    readonly endpoint: string,
    message: string,
    options: { status?: number; cause?: unknown; upstreamStatus?: number; unsent?: boolean } = {},
  ) {
    super(code, `${endpoint}: ${message}`, { status: options.status ?? 502, cause: options.cause });
    this.upstreamStatus = options.upstreamStatus;
    this.unsent = options.unsent ?? false;
  }
  readonly upstreamStatus?: number;
  /**
   * The tenant cannot have acted on the request: every attempt was refused before it was handled (no connection,
   * 429, 503, 401). A write that failed so may be sent again later; any other failed write is `OutcomeUnknown`.
   */
  readonly unsent: boolean;
}

/**
 * A write (a GraphQL mutation) whose answer was lost after the request may have reached the tenant — a reset, a
 * timeout, a 5xx other than 503, an answer that is not GraphQL: it may or may not have been applied, and it is
 * never sent again by itself.
 */
export class OutcomeUnknown extends IntegrationError {
  constructor(
    readonly endpoint: string,
    message: string,
    options: { cause?: unknown; upstreamStatus?: number } = {},
  ) {
    super('outcome_unknown', `${endpoint}: ${message}`, { status: 502, cause: options.cause });
    this.upstreamStatus = options.upstreamStatus;
  }
  readonly upstreamStatus?: number;
}

/** The GraphQL response carried `errors`; `data` is whatever partial data came with them. */
export class GraphqlErrors extends IntegrationError {
  constructor(
    readonly operation: string,
    readonly errors: ReadonlyArray<{ message: string; code?: string; path?: ReadonlyArray<string | number> }>,
    readonly data: unknown,
    options: { upstreamStatus?: number } = {},
  ) {
    // The first three, each bounded: a server's message may repeat anything the document held, at any length.
    const shown = errors.slice(0, 3).map((e) => bounded(e.message, 500));
    super(
      'graphql_errors',
      `GraphQL operation ${operation} returned errors: ${shown.join('; ')}${errors.length > 3 ? ` (and ${errors.length - 3} more)` : ''}`,
      { status: 502 },
    );
    this.upstreamStatus = options.upstreamStatus;
  }
  readonly upstreamStatus?: number;
}

/** The caller asked for something this client will not send: a mutation with a read-only M2M token, or a bad document. */
export class RequestRefused extends IntegrationError {
  constructor(
    code: 'read_only_credential' | 'invalid_document',
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(code, message, { status: code === 'read_only_credential' ? 403 : 400, cause: options.cause });
  }
}
