/**
 * Verifier for identity-provider JWTs (interface-spec §5): the signature is checked against the provider's JWKS
 * (`jose` createRemoteJWKSet: cached, refetched for an unknown `kid` at most every `cooldownMs`), with the
 * configured issuer and audience, pinned algorithms and 30 s of clock tolerance. The caller is the `jwt` user of the
 * token's issuer + `sub` (db/users.ts), created on first sight with a label from the `email`, `preferred_username`
 * or `name` claim; the label never identifies anyone (a local user of the same name is another user).
 *
 * Failures (all 401 unless said otherwise): expired → `Token has expired`; any other verification failure
 * (signature, issuer, audience, algorithm, unknown key, malformed, missing `sub`, `iat` more than 30 s in the
 * future) → `Unauthorized`; a disabled
 * user → `User is disabled`; the JWKS cannot be fetched (provider down, timeout, bad document) → 503
 * `Identity provider unavailable, please retry` (never accepted unverified).
 */
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import type { JwtSettings } from '../config/service-config.ts';
import type { Store } from '../db/store.ts';
import { ServiceError } from '../errors.ts';
import { AUTH_MESSAGES, unauthorized, type CredentialVerifier } from './authenticate.ts';

export const CLOCK_TOLERANCE_S = 30;

export interface JwtVerifierOptions extends JwtSettings {
  /** Minimum time between JWKS refetches for unknown `kid`s (jose default 30 s; tests use 0). */
  cooldownMs?: number;
  /** JWKS HTTP timeout (jose default 5 s). */
  timeoutMs?: number;
  /** The clock, in ms since the epoch (tests). */
  now?: () => number;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** True when `token` has the three-part compact JWS shape. */
export function looksLikeJwt(token: string): boolean {
  return JWT_SHAPE.test(token);
}

function claimString(payload: JWTPayload, name: string): string | undefined {
  const v = payload[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

export function jwtVerifier(store: Pick<Store, 'users' | 'txAsync'>, opts: JwtVerifierOptions): CredentialVerifier {
  const jwks = createRemoteJWKSet(new URL(opts.jwksUrl), {
    ...(opts.cooldownMs !== undefined && { cooldownDuration: opts.cooldownMs }),
    ...(opts.timeoutMs !== undefined && { timeoutDuration: opts.timeoutMs }),
  });
  const now = opts.now ?? Date.now;
  return {
    kind: 'jwt',
    claims: looksLikeJwt,
    async verify(token) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, jwks, {
          issuer: opts.issuer,
          audience: opts.audience,
          algorithms: opts.algorithms,
          clockTolerance: CLOCK_TOLERANCE_S,
          currentDate: new Date(now()),
          requiredClaims: ['sub', 'exp'],
        }));
      } catch (err) {
        if (err instanceof errors.JWTExpired) throw unauthorized(AUTH_MESSAGES.expired);
        if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) throw unavailable();
        // A failed JWKS fetch surfaces as a plain JOSEError (non-200, bad JSON) or fetch's TypeError (network).
        if (err instanceof errors.JOSEError && err.code === 'ERR_JOSE_GENERIC') throw unavailable();
        if (err instanceof TypeError && /fetch/i.test(err.message)) throw unavailable();
        throw unauthorized(AUTH_MESSAGES.invalidJwt);
      }
      const sub = claimString(payload, 'sub');
      if (!sub) throw unauthorized(AUTH_MESSAGES.invalidJwt);
      // jose checks `iat` only against a maxTokenAge; a token issued in the future is a forged or mis-clocked one.
      if (typeof payload.iat === 'number' && payload.iat > now() / 1000 + CLOCK_TOLERANCE_S)
        throw unauthorized(AUTH_MESSAGES.invalidJwt);
      const user = await store.txAsync(() =>
        store.users.ensureJwtUser(opts.issuer, sub, {
          email: claimString(payload, 'email') ?? null,
          preferredName: claimString(payload, 'preferred_username') ?? claimString(payload, 'name') ?? null,
        }),
      );
      if (user.disabled) throw unauthorized(AUTH_MESSAGES.disabledUser);
      return { id: user.id, name: user.name, credential: { kind: 'jwt', issuer: opts.issuer, subject: sub } };
    },
  };
}

const unavailable = () => new ServiceError(503, 'Identity provider unavailable, please retry');
