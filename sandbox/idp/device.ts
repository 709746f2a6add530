import { randomBytes, randomInt } from 'node:crypto';
import type { Clock } from '../../shared/clock';

export const DEVICE_CODE_LIFETIME_SECONDS = 600;
export const POLL_INTERVAL_SECONDS = 5;

export interface DeviceGrant {
  deviceCode: string;
  userCode: string;
  clientId: string;
  scope: string;
  createdAt: number;
  expiresAt: number;
  /** Last poll that was not answered `slow_down` (Keycloak's rule). */
  lastAcceptedPollAt?: number;
  status: 'pending' | 'approved' | 'denied' | 'used';
  userId?: string;
}

// No vowels, so a code never spells a word; digits as the seed's shape `XXXX-NNNN` says.
const LETTERS = 'BCDFGHJKLMNPQRSTVWXZ';

function newUserCode(): string {
  let letters = '';
  for (let i = 0; i < 4; i++) letters += LETTERS[randomInt(LETTERS.length)];
  return `${letters}-${String(randomInt(10_000)).padStart(4, '0')}`;
}

/** Normalises what a person types: case, spaces, a missing dash. */
export function normaliseUserCode(input: string): string {
  const compact = input.toUpperCase().replace(/[^A-Z0-9]/g, '');
  return compact.length === 8 ? `${compact.slice(0, 4)}-${compact.slice(4)}` : input.trim().toUpperCase();
}

export class DeviceStore {
  private readonly byDeviceCode = new Map<string, DeviceGrant>();
  private readonly byUserCode = new Map<string, DeviceGrant>();

  constructor(private readonly clock: Clock) {}

  create(clientId: string, scope: string): DeviceGrant {
    this.sweep();
    let userCode = newUserCode();
    while (this.byUserCode.has(userCode)) userCode = newUserCode();
    const now = this.clock.now();
    const grant: DeviceGrant = {
      deviceCode: randomBytes(32).toString('base64url'),
      userCode,
      clientId,
      scope,
      createdAt: now,
      expiresAt: now + DEVICE_CODE_LIFETIME_SECONDS * 1000,
      status: 'pending',
    };
    this.byDeviceCode.set(grant.deviceCode, grant);
    this.byUserCode.set(userCode, grant);
    return grant;
  }

  byDevice(deviceCode: string): DeviceGrant | undefined {
    return this.byDeviceCode.get(deviceCode);
  }

  /** A grant a person can still act on: pending and not expired. */
  pendingByUserCode(userCode: string): DeviceGrant | undefined {
    const g = this.byUserCode.get(normaliseUserCode(userCode));
    return g && g.status === 'pending' && !this.isExpired(g) ? g : undefined;
  }

  isExpired(g: DeviceGrant): boolean {
    return this.clock.now() >= g.expiresAt;
  }

  approve(g: DeviceGrant, userId: string): void {
    g.status = 'approved';
    g.userId = userId;
  }

  deny(g: DeviceGrant): void {
    g.status = 'denied';
  }

  /** Forget grants long past expiry so memory stays bounded in a long-running sandbox. */
  private sweep(): void {
    const horizon = this.clock.now() - DEVICE_CODE_LIFETIME_SECONDS * 1000;
    for (const g of this.byDeviceCode.values()) {
      if (g.expiresAt < horizon) {
        this.byDeviceCode.delete(g.deviceCode);
        this.byUserCode.delete(g.userCode);
      }
    }
  }

  clear(): void {
    this.byDeviceCode.clear();
    this.byUserCode.clear();
  }
}
