/**
 * Turns a bearer credential into the user it belongs to. Each credential kind (API token today, an identity
 * provider's JWT later: interface-spec §5) is a CredentialVerifier that claims the tokens of its shape;
 * the first verifier that claims a token decides. Failures are 401 ServiceErrors with the spec's messages.
 */
import { ServiceError } from '../errors.ts';

/** The caller of a request, as routes see it. */
export interface AuthUser {
  id: string;
  /** A local user's name, or a JWT user's label (not unique: never use it to identify anyone). */
  name: string;
  /** How the caller proved who they are; `tokenId` is set for API tokens. */
  credential: { kind: 'api-token'; tokenId: string } | { kind: 'jwt'; issuer: string; subject: string };
}

export type CredentialKind = AuthUser['credential']['kind'];

export interface CredentialVerifier {
  readonly kind: CredentialKind;
  /** True when `token` has this verifier's shape (a cheap, syntactic check). */
  claims(token: string): boolean;
  /** The user behind `token`. @throws ServiceError 401 when it is not valid. */
  verify(token: string): Promise<AuthUser>;
}

/** Spec §5 messages. */
export const AUTH_MESSAGES = {
  missingHeader: 'Missing or invalid Authorization header',
  invalidApiToken: 'Invalid or revoked API token',
  expired: 'Token has expired',
  /** A JWT that fails verification (bad signature, issuer, audience, algorithm, unknown key, malformed). */
  invalidJwt: 'Unauthorized',
  /** A valid JWT of a user an operator disabled (`switchboard user disable`). */
  disabledUser: 'User is disabled',
} as const;

export const unauthorized = (message: string) => new ServiceError(401, message);

export type Authenticate = (token: string, opts?: { kinds?: readonly CredentialKind[] }) => Promise<AuthUser>;

/**
 * Returns `authenticate(token)`, which resolves to the caller or rejects with a 401 ServiceError.
 * A token no verifier claims (or of a kind not in `opts.kinds`, e.g. a JWT on the WebSocket) is reported as an
 * invalid API token: that is the one kind every entry point accepts.
 */
export function createAuthenticator(verifiers: readonly CredentialVerifier[]): Authenticate {
  return async (token, opts = {}) => {
    const verifier = verifiers.find((v) => v.claims(token));
    if (!verifier || (opts.kinds && !opts.kinds.includes(verifier.kind)))
      throw unauthorized(AUTH_MESSAGES.invalidApiToken);
    return verifier.verify(token);
  };
}

/**
 * The token of an `Authorization: Bearer <token>` header value; undefined when the header is missing or has
 * another shape (a 401 `Missing or invalid Authorization header`).
 */
export function bearerToken(header: string | undefined): string | undefined {
  const m = header === undefined ? null : /^Bearer +([\x21-\x7e]+) *$/i.exec(header);
  return m?.[1];
}
