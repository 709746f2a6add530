import { GraphQLError } from 'graphql';
import { OffsetClock } from '../shared/clock';
import type { SchemaEdits } from './types';
import { DataStore } from './data/store';
import { FaultQueue } from './faults';
import { RateWindows, type Limits } from './limits';
import { HttpError, type Request } from './http';
import { CredentialStore } from './idp/credentials';
import { DeviceStore } from './idp/device';
import { RealmKeys } from './idp/keys';
import { SessionStore } from './idp/sessions';
import { emptyStats, type SandboxStats } from './stats';

export interface SandboxOptions {
  tenant: string;
  /** Records per kind. */
  records: number;
  seed: string;
  /** When false the organisation has not enabled M2M credentials: the API Credentials page is absent. */
  m2mEnabled: boolean;
  /** Keycloak-compatible mode for third-party clients (msal-node sends a scope). */
  acceptClientCredentialsScope: boolean;
  /** The demo M2M credential created at start (and again after a reset), with this id and secret. */
  demoCredential: { clientId: string; secret: string; label: string };
  /** Which schema the GraphQL endpoint serves (sandbox/shapes/). */
  schema: 'default' | 'varied' | 'odd';
  /** False: introspection is refused, as many production servers do. */
  introspection: boolean;
  /** Limits enforced from the start (`--limits`); the `limits` hook changes them. */
  limits: Limits;
}

/** Everything the sandbox knows; the HTTP layer is a thin shell around it. */
export class Sandbox {
  readonly clock = new OffsetClock();
  readonly credentials = new CredentialStore(this.clock);
  readonly devices = new DeviceStore(this.clock);
  readonly sessions = new SessionStore(this.clock);
  readonly faults = new FaultQueue();
  readonly rates = new RateWindows();
  /** The complexity ceiling and rate enforced now (sandbox/limits.ts). */
  limits: Limits;
  /** Ids of people an administrator has disabled: their refreshes and logins are refused, as in Keycloak. */
  readonly disabledPeople = new Set<string>();
  /** Records whose mutations the service refuses with a domain error (`mutations/refuse`): id → message. */
  readonly refusedMutations = new Map<string, string>();
  stats: SandboxStats = emptyStats();
  data: DataStore;
  /** What the `schema/…` hooks changed; `schemaVersion` counts the changes (the endpoint rebuilds on one). */
  schemaEdits: SchemaEdits;
  schemaVersion = 0;
  /** Set once the server listens: `http://127.0.0.1:PORT`. */
  baseUrl = '';

  private constructor(
    readonly options: SandboxOptions,
    readonly keys: RealmKeys,
  ) {
    this.data = new DataStore(options.seed, options.records, () => this.clock.now());
    this.schemaEdits = { removed: [], added: [], introspection: options.introspection };
    this.limits = { ...options.limits };
    this.seedCredentials();
  }

  editSchema(change: (edits: SchemaEdits) => void): void {
    change(this.schemaEdits);
    this.schemaVersion++;
  }

  static async create(options: SandboxOptions): Promise<Sandbox> {
    return new Sandbox(options, await RealmKeys.create());
  }

  get authUrl(): string {
    return `${this.baseUrl}/auth`;
  }

  realmUrl(): string {
    return `${this.authUrl}/realms/${this.options.tenant}`;
  }

  issuer(): string {
    return this.realmUrl();
  }

  displayName(): string {
    return `${this.options.tenant[0].toUpperCase()}${this.options.tenant.slice(1)} (sandbox)`;
  }

  /** A mutation of record `id` refused as the service refuses a change its rules forbid (a domain error). */
  refuseIfAsked(id: string): void {
    const message = this.refusedMutations.get(id);
    if (message !== undefined) throw new DomainError(message);
  }

  /** Checks the `{tenant}` in a path: other realms do not exist, as in Keycloak. */
  realm(req: Request): this {
    if (req.params.tenant !== this.options.tenant)
      throw new HttpError(404, { error: 'Realm does not exist' });
    return this;
  }

  private seedCredentials(): void {
    const { clientId, secret, label } = this.options.demoCredential;
    this.credentials.create(label, { clientId, secret });
  }

  /** Back to the state at start: data, credentials, sessions, codes, faults, stats and clock. */
  reset(): void {
    this.clock.reset();
    this.credentials.clear();
    this.devices.clear();
    this.sessions.clear();
    this.faults.clear();
    this.disabledPeople.clear();
    this.refusedMutations.clear();
    this.stats = emptyStats();
    this.limits = { ...this.options.limits };
    this.data = new DataStore(this.options.seed, this.options.records, () => this.clock.now());
    this.editSchema((e) =>
      Object.assign(e, { removed: [], added: [], introspection: this.options.introspection }),
    );
    this.seedCredentials();
  }
}

/** A change the service's own rules refuse (not a malformed request): its message is the one callers see. */
export class DomainError extends GraphQLError {
  constructor(message: string) {
    super(message, { extensions: { code: 'DOMAIN_RULE' } });
  }
}
