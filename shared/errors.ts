/**
 * The few error classes of the app. Each has a stable `code`, the HTTP status where one fits, and keeps
 * its `cause`. Messages say what to do and never carry a token or secret.
 */
export class IntegrationError extends Error {
  constructor(
    readonly code: string,
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
    super('CONFIG_INVALID', `Invalid ${source}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** A secret the app needs is not in the store. */
export class SecretNotFound extends IntegrationError {
  constructor(
    readonly secretName: string,
    where: string,
  ) {
    super(
      'SECRET_NOT_FOUND',
      `Secret "${secretName}" is not in ${where}. Set it with \`tenant-integrations secrets set ${secretName}\`` +
        ` (reads the value from stdin) or \`az keyvault secret set --vault-name <vault> --name ${secretName} --file <file>\`.`,
      { status: 500 },
    );
  }
}

/** The secret store could not be reached or answered an error. */
export class SecretStoreError extends IntegrationError {
  constructor(message: string, cause?: unknown) {
    super('SECRET_STORE_UNAVAILABLE', message, { status: 503, cause });
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
      'CREDENTIAL_REJECTED',
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
      'LOGIN_REQUIRED',
      `The delegated session needs a new login (${reason}). Open the admin page (/api/manage) and start a device login, or run \`tenant-integrations login\`.`,
      { status: 401, cause: options.cause },
    );
  }
}

/** An upstream endpoint failed, answered something malformed, or refused the request for good. */
export class UpstreamError extends IntegrationError {
  constructor(
    code: 'UPSTREAM_UNAVAILABLE' | 'UPSTREAM_MALFORMED' | 'UPSTREAM_REJECTED' | 'UPSTREAM_TIMEOUT',
    readonly endpoint: string,
    message: string,
    options: { status?: number; cause?: unknown; upstreamStatus?: number } = {},
  ) {
    super(code, `${endpoint}: ${message}`, { status: options.status ?? 502, cause: options.cause });
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
    super(
      'GRAPHQL_ERRORS',
      `GraphQL operation ${operation} returned errors: ${errors.map((e) => e.message).join('; ')}`,
      { status: 502 },
    );
    this.upstreamStatus = options.upstreamStatus;
  }
  readonly upstreamStatus?: number;
}

/** The caller asked for something this client will not send: a mutation with a read-only M2M token, or a bad document. */
export class RequestRefused extends IntegrationError {
  constructor(
    code: 'READ_ONLY_CREDENTIAL' | 'INVALID_DOCUMENT',
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(code, message, { status: code === 'READ_ONLY_CREDENTIAL' ? 403 : 400, cause: options.cause });
  }
}
