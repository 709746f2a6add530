import { randomUUID } from 'node:crypto';
import {
  exportJWK,
  generateKeyPair,
  jwtVerify,
  SignJWT,
  type JWK,
  type JWTPayload,
  type KeyLike,
} from 'jose';
import type { Clock } from '../../shared/clock';

/** The realm's signing key: RS256 like Keycloak's default, published as a JWKS. */
export class RealmKeys {
  private constructor(
    private readonly privateKey: KeyLike,
    private readonly publicKey: KeyLike,
    readonly jwk: JWK,
  ) {}

  static async create(): Promise<RealmKeys> {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: randomUUID(), alg: 'RS256', use: 'sig' };
    return new RealmKeys(privateKey, publicKey, jwk);
  }

  jwks(): { keys: JWK[] } {
    return { keys: [this.jwk] };
  }

  async sign(claims: JWTPayload, issuer: string, lifetimeSeconds: number, clock: Clock): Promise<string> {
    const iat = Math.floor(clock.now() / 1000);
    return new SignJWT({ ...claims })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: this.jwk.kid })
      .setIssuer(issuer)
      .setIssuedAt(iat)
      .setExpirationTime(iat + lifetimeSeconds)
      .setJti(randomUUID())
      .sign(this.privateKey);
  }

  /** Verifies signature, issuer and expiry against the sandbox clock (which tests move). */
  async verify(token: string, issuer: string, clock: Clock): Promise<JWTPayload> {
    const { payload } = await jwtVerify(token, this.publicKey, {
      issuer,
      algorithms: ['RS256'],
      currentDate: new Date(clock.now()),
      clockTolerance: 0,
    });
    return payload;
  }
}
