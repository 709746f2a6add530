import { randomBytes, randomUUID } from 'node:crypto';
import type { Clock } from '../../shared/clock';

/** Keycloak's defaults: SSO session idle 1800 s, max 10 h. */
export const REFRESH_IDLE_SECONDS = 1800;
export const SESSION_MAX_SECONDS = 36_000;

export interface UserSession {
  id: string;
  userId: string;
  startedAt: number;
  lastRefreshAt: number;
  ended: boolean;
  /** The scope granted at login; every refresh answers it again, as Keycloak does. */
  scope: string;
}

/**
 * Delegated sessions and their refresh tokens. Like Keycloak with `revokeRefreshToken` off: every refresh
 * returns a new refresh token, and older ones keep working until the session ends (idle or max).
 */
export class SessionStore {
  private readonly sessions = new Map<string, UserSession>();
  private readonly refreshTokens = new Map<string, string>();

  constructor(private readonly clock: Clock) {}

  start(userId: string, scope: string): UserSession {
    const now = this.clock.now();
    const s: UserSession = {
      id: randomUUID(),
      userId,
      startedAt: now,
      lastRefreshAt: now,
      ended: false,
      scope,
    };
    this.sessions.set(s.id, s);
    return s;
  }

  issueRefreshToken(s: UserSession): string {
    const token = randomBytes(32).toString('base64url');
    this.refreshTokens.set(token, s.id);
    return token;
  }

  /** When this session's refresh tokens stop working: idle timeout or session max, whichever is first. */
  refreshExpiresAt(s: UserSession): number {
    return Math.min(s.lastRefreshAt + REFRESH_IDLE_SECONDS * 1000, s.startedAt + SESSION_MAX_SECONDS * 1000);
  }

  /** For `refresh_expires_in`: whole seconds, rounded so the milliseconds spent signing do not show. */
  refreshExpiresIn(s: UserSession): number {
    return Math.max(0, Math.round((this.refreshExpiresAt(s) - this.clock.now()) / 1000));
  }

  /** The live session of a refresh token, or why there is none. */
  resolve(token: string): { session: UserSession } | { error: string } {
    const id = this.refreshTokens.get(token);
    const s = id === undefined ? undefined : this.sessions.get(id);
    if (!s) return { error: 'Invalid refresh token' };
    if (s.ended) return { error: 'Session not active' };
    if (this.clock.now() >= this.refreshExpiresAt(s)) {
      this.end(s);
      return { error: 'Token is not active' };
    }
    return { session: s };
  }

  touch(s: UserSession): void {
    s.lastRefreshAt = this.clock.now();
  }

  /** Its refresh tokens stay known, so they are answered "Session not active" (Keycloak's words), not unknown. */
  end(s: UserSession): void {
    s.ended = true;
  }

  /** Ends every session of one person (the admin console's "sign out", or OIDC logout of each). */
  endAllOf(userId: string): number {
    let ended = 0;
    for (const s of this.sessions.values())
      if (s.userId === userId && !s.ended) {
        this.end(s);
        ended++;
      }
    return ended;
  }

  /** The session a refresh token belongs to, ended or not (logout needs it even when idle). */
  sessionOf(token: string): UserSession | undefined {
    const id = this.refreshTokens.get(token);
    return id === undefined ? undefined : this.sessions.get(id);
  }

  clear(): void {
    this.sessions.clear();
    this.refreshTokens.clear();
  }
}
