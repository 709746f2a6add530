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
