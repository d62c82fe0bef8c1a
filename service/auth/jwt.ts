/**
 * Verifier for identity-provider JWTs (interface-spec §5): the signature is checked against the provider's JWKS
 * (`jose` createRemoteJWKSet: cached, refetched for an unknown `kid` at most every `cooldownMs`), with the
 * configured issuer and audience, pinned algorithms and 30 s of clock tolerance. The caller is the user of the
 * token's `iss|sub`, created on first sight from the `sub`, `email` and `preferred_username`/`name` claims.
 *
 * Failures (all 401 unless said otherwise): expired → `Token has expired`; any other verification failure
 * (signature, issuer, audience, algorithm, unknown key, malformed, missing `sub`) → `Unauthorized`; a disabled
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

export function jwtVerifier(store: Pick<Store, 'users' | 'tx'>, opts: JwtVerifierOptions): CredentialVerifier {
  const jwks = createRemoteJWKSet(new URL(opts.jwksUrl), {
    ...(opts.cooldownMs !== undefined && { cooldownDuration: opts.cooldownMs }),
    ...(opts.timeoutMs !== undefined && { timeoutDuration: opts.timeoutMs }),
  });
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
      const subject = `${opts.issuer}|${sub}`;
      const user = store.tx(() =>
        store.users.ensureForSubject(subject, {
          sub,
          email: claimString(payload, 'email') ?? null,
          preferredName: claimString(payload, 'preferred_username') ?? claimString(payload, 'name') ?? null,
        }),
      );
      if (user.disabled) throw unauthorized(AUTH_MESSAGES.disabledUser);
      return { id: user.id, name: user.name, credential: { kind: 'jwt', subject } };
    },
  };
}

const unavailable = () => new ServiceError(503, 'Identity provider unavailable, please retry');
