import { systemClock, type Clock } from '../clock';
import type { TenantSettings } from '../config';
import { IntegrationError, LoginRequired, SecretNotFound, UpstreamError } from '../errors';
import { silentLogger, type Logger } from '../log';
import { DEFAULT_RETRY, withRetries, type RetryPolicy } from '../net/retry';
import type { SecretStore } from '../secrets/types';
import type { SessionMetadata, SessionMetadataStore } from '../state/session-metadata';
import { abortable, type AccessToken } from './client-credentials';
import type { TokenSource } from '../graphql/client';
import { inSpan, SpanKind } from '../telemetry';
import { PORTAL_CLIENT_ID, tenantEndpoints } from './endpoints';
import {
  delegatedTokenSchema,
  parseBody,
  postForm,
  type DelegatedTokenResponse,
  type FetchLike,
  type OAuthReply,
} from './oauth';

export interface DelegatedSessionOptions {
  clock?: Clock;
  logger?: Logger;
  fetch?: FetchLike;
  timeoutMs?: number;
  retry?: RetryPolicy;
  minValiditySeconds?: number;
}

/** Key Vault secret names allow letters, digits and dashes. */
export const delegatedSecretName = (tenant: string) =>
  `delegated-refresh-token-${tenant.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`.slice(0, 127);

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * A person's delegated session (device flow, docs/service-rules.md#tokens): the refresh token lives only in the secret store;
 * metadata (who, since, last refresh, refresh expiry, state) in the metadata store. Refreshing returns a
 * new refresh token, which replaces the stored one; a failed refresh means the device flow must run again.
 */
export class DelegatedSession {
  readonly kind = 'delegated' as const;
  readonly secretName: string;
  private cached?: AccessToken;
  private inFlight?: Promise<AccessToken>;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly tokenUrl: string;
  private readonly retry: RetryPolicy;

  constructor(
    readonly tenant: TenantSettings,
    private readonly secrets: SecretStore,
    private readonly metadata: SessionMetadataStore,
    private readonly options: DelegatedSessionOptions = {},
  ) {
    this.secretName = delegatedSecretName(tenant.name);
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.tokenUrl = tenantEndpoints(tenant).token;
    this.retry = options.retry ?? DEFAULT_RETRY;
  }

  /** Stores the result of a completed device flow. Answers the metadata (no token). */
  async connect(tokens: DelegatedTokenResponse): Promise<SessionMetadata> {
    const now = this.clock.now();
    const claims = safeClaims(tokens.access_token);
    await this.secrets.set(this.secretName, tokens.refresh_token);
    const metadata: SessionMetadata = {
      username: claims.username ?? 'unknown',
      name: claims.name,
      connectedAt: iso(now),
      lastRefreshAt: iso(now),
      refreshExpiresAt: iso(now + (tokens.refresh_expires_in ?? 1800) * 1000),
      state: 'connected',
    };
    await this.metadata.put(this.tenant.name, metadata);
    this.cached = { token: tokens.access_token, expiresAt: now + tokens.expires_in * 1000 };
    this.logger.log('info', 'delegated session connected', { tenant: this.tenant.name, state: 'connected' });
    return metadata;
  }

  status(): Promise<SessionMetadata | undefined> {
    return this.metadata.get(this.tenant.name);
  }

  /** An access token acting as the person; refreshes when needed. `LoginRequired` when that fails. */
  async getToken(options: { abortSignal?: AbortSignal } = {}): Promise<string> {
    const c = this.cached;
    if (c && this.clock.now() < c.expiresAt - (this.options.minValiditySeconds ?? 30) * 1000) return c.token;
    return (await abortable(this.refreshOnce(), options.abortSignal)).token;
  }

  invalidate(token: string): void {
    if (this.cached?.token === token) this.cached = undefined;
  }

  /** The keeper's call: refresh now, keeping the session alive inside its idle window. */
  async refresh(): Promise<SessionMetadata> {
    await this.refreshOnce();
    return (await this.status()) as SessionMetadata;
  }

  private refreshOnce(): Promise<AccessToken> {
    this.inFlight ??= inSpan('token refresh', { endpoint: 'token' }, () => this.doRefresh(), {
      kind: SpanKind.CLIENT,
    }).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async doRefresh(): Promise<AccessToken> {
    let refreshToken: string;
    try {
      refreshToken = await this.secrets.get(this.secretName);
    } catch (err) {
      if (err instanceof SecretNotFound)
        throw await this.loginRequired('no delegated session has been stored', err);
      throw err;
    }
    const { reply, sentAt, attempt } = await withRetries<{
      reply: Exclude<OAuthReply, { kind: 'transient' }>;
      sentAt: number;
      attempt: number;
    }>(
      async (attempt) => {
        const sentAt = this.clock.now();
        const reply = await postForm(
          this.tokenUrl,
          { grant_type: 'refresh_token', client_id: PORTAL_CLIENT_ID, refresh_token: refreshToken },
          { fetch: this.options.fetch, timeoutMs: this.options.timeoutMs ?? 10_000 },
        );
        return reply.kind === 'transient'
          ? { transient: { status: reply.status, retryAfter: reply.retryAfter } }
          : { done: { reply, sentAt, attempt } };
      },
      this.retry,
      {
        clock: this.clock,
        // An outage is not a lost session: the stored refresh token may still work later.
        exhausted: ({ status }, attempts) =>
          new UpstreamError(
            'upstream_unavailable',
            this.tokenUrl,
            `refresh failed after ${attempts} attempts (${status || 'network error or timeout'})`,
            { status: 503 },
          ),
      },
    );
    if (reply.kind !== 'ok') {
      const what = reply.kind === 'oauth-error' ? reply.error : `HTTP ${reply.status}`;
      throw await this.loginRequired(`refresh refused: ${what}`);
    }
    const tokens = parseBody(this.tokenUrl, delegatedTokenSchema, reply.body);
    await this.secrets.set(this.secretName, tokens.refresh_token);
    const previous = await this.status();
    const claims = safeClaims(tokens.access_token);
    await this.metadata.put(this.tenant.name, {
      username: claims.username ?? previous?.username ?? 'unknown',
      name: claims.name ?? previous?.name,
      connectedAt: previous?.connectedAt ?? iso(sentAt),
      lastRefreshAt: iso(sentAt),
      refreshExpiresAt: iso(sentAt + (tokens.refresh_expires_in ?? 1800) * 1000),
      state: 'connected',
    });
    this.logger.log('info', 'delegated session refreshed', { tenant: this.tenant.name, attempt });
    this.cached = { token: tokens.access_token, expiresAt: sentAt + tokens.expires_in * 1000 };
    return this.cached;
  }

  private async loginRequired(reason: string, cause?: unknown): Promise<IntegrationError> {
    this.cached = undefined;
    const previous = await this.status().catch(() => undefined);
    if (previous) await this.metadata.put(this.tenant.name, { ...previous, state: 'login-required', reason });
    this.logger.log('warn', 'delegated session needs a new login', {
      tenant: this.tenant.name,
      state: 'login-required',
      reason,
    });
    return new LoginRequired(reason, { cause });
  }
}

/**
 * The session's tokens only while they act as `person` (the admin an import was accepted under): a session someone
 * else signed in with since is refused before anything is sent, as a lost session is — the caller waits for `person`.
 */
export function asPerson(session: TokenSource, person: string): TokenSource {
  let last: { token: string; username?: string } | undefined;
  return {
    kind: 'delegated',
    async getToken(options) {
      const token = await session.getToken(options);
      if (last?.token !== token) last = { token, username: safeClaims(token).username };
      if (last.username !== person)
        throw new LoginRequired(
          `the session is ${last.username ?? 'someone else'}'s; this was accepted under ${person}, who must sign in`,
        );
      return token;
    },
    invalidate: (token) => session.invalidate(token),
  };
}

/**
 * Who the token names (not a trust decision: the IdP already issued it): `preferred_username` where the IdP sets it,
 * as Keycloak does, else `sub`, which every OpenID token carries — so an import accepted under a person is applied by
 * that person's session only, on an IdP that sends no username too.
 */
export function safeClaims(token: string): { username?: string; name?: string } {
  try {
    // jose on first use: a cold start that never reads a delegated token does not pay for it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const c = (require('jose') as typeof import('jose')).decodeJwt(token);
    const named = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v : undefined);
    return {
      username: named(c.preferred_username) ?? named(c.sub),
      name: named(c.name),
    };
  } catch {
    return {};
  }
}

/** The keeper runs every 5 minutes and refreshes a session idle for 10: well inside the 30-minute window. */
export const KEEPER_SCHEDULE = '0 */5 * * * *';
export const KEEPER_REFRESH_AFTER_MS = 10 * 60_000;

/** The keeper's decision, pure: refresh when connected and idle long enough. */
export const keeperShouldRefresh = (m: SessionMetadata | undefined, now: number) =>
  m?.state === 'connected' && now - Date.parse(m.lastRefreshAt) >= KEEPER_REFRESH_AFTER_MS;

/** Session metadata as the admin page shows it, with when the keeper will next refresh. */
export function sessionView(m: SessionMetadata | undefined) {
  if (!m) return { state: 'none' as const };
  return {
    ...m,
    nextRefreshAt:
      m.state === 'connected'
        ? new Date(Date.parse(m.lastRefreshAt) + KEEPER_REFRESH_AFTER_MS).toISOString()
        : undefined,
  };
}
