import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../shared/clock';

export interface Credential {
  clientId: string;
  label: string;
  createdAt: number;
  /** Milliseconds; the credential stops working at this instant (like revoke, from that date). */
  expiresAt?: number;
  revokedAt?: number;
  rotatedAt?: number;
  secretHash: Buffer;
}

export type CredentialStatus = 'active' | 'revoked' | 'expired';

export type Authentication =
  { ok: true; credential: Credential } | { ok: false; reason: 'unknown' | 'disabled' | 'wrong-secret' };

const hash = (secret: string) => createHash('sha256').update(secret, 'utf8').digest();
const newSecret = () => randomBytes(32).toString('base64url');

/** M2M credentials of the portal's API Credentials page. Only secret hashes are kept: shown once. */
export class CredentialStore {
  private readonly byId = new Map<string, Credential>();

  constructor(private readonly clock: Clock) {}

  create(label: string, opts: { expiresAt?: number; clientId?: string; secret?: string } = {}) {
    const clientId = opts.clientId ?? `m2m-${randomBytes(6).toString('hex')}`;
    if (this.byId.has(clientId)) throw new Error(`credential ${clientId} exists`);
    const secret = opts.secret ?? newSecret();
    const credential: Credential = {
      clientId,
      label,
      createdAt: this.clock.now(),
      expiresAt: opts.expiresAt,
      secretHash: hash(secret),
    };
    this.byId.set(clientId, credential);
    return { credential, secret };
  }

  get(clientId: string): Credential | undefined {
    return this.byId.get(clientId);
  }

  list(): Credential[] {
    return [...this.byId.values()];
  }

  status(c: Credential): CredentialStatus {
    if (c.revokedAt !== undefined) return 'revoked';
    if (c.expiresAt !== undefined && this.clock.now() >= c.expiresAt) return 'expired';
    return 'active';
  }

  /** New secret; the old one is invalid for new token requests at once. Issued tokens are untouched. */
  rotate(clientId: string): string | undefined {
    const c = this.byId.get(clientId);
    if (!c || this.status(c) !== 'active') return undefined;
    const secret = newSecret();
    c.secretHash = hash(secret);
    c.rotatedAt = this.clock.now();
    return secret;
  }

  /** Permanent. */
  revoke(clientId: string): boolean {
    const c = this.byId.get(clientId);
    if (!c) return false;
    c.revokedAt ??= this.clock.now();
    return true;
  }

  authenticate(clientId: string, secret: string): Authentication {
    const c = this.byId.get(clientId);
    if (!c) return { ok: false, reason: 'unknown' };
    if (this.status(c) !== 'active') return { ok: false, reason: 'disabled' };
    if (!timingSafeEqual(c.secretHash, hash(secret))) return { ok: false, reason: 'wrong-secret' };
    return { ok: true, credential: c };
  }

  clear(): void {
    this.byId.clear();
  }
}
