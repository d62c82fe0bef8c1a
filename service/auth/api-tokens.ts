/**
 * API token format (DESIGN.md §4): `wh_` + base62(32 random bytes) + 6-char base62 CRC32 of the random part.
 * The checksum lets us reject typos and foreign strings without a database lookup (and lets secret scanners
 * recognise our tokens). Tokens are stored as SHA-256 hex; the display prefix is the first 10 characters.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { isBusyError, type Store } from '../db/store.ts';
import type { TokenRecord, TokensRepo } from '../db/tokens.ts';
import { AUTH_MESSAGES, unauthorized, type CredentialVerifier } from './authenticate.ts';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const TOKEN_PREFIX = 'wh_';
const BODY_LENGTH = 43; // ceil(256 bits / log2(62))
const CHECK_LENGTH = 6;

function base62(n: bigint, width: number): string {
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)]! + out;
    n /= 62n;
  }
  return out.padStart(width, '0');
}

function checksum(body: string): string {
  return base62(BigInt(crc32(body)), CHECK_LENGTH);
}

/** A new random token string. */
export function generateToken(): string {
  const body = base62(BigInt('0x' + randomBytes(32).toString('hex')), BODY_LENGTH);
  return TOKEN_PREFIX + body + checksum(body);
}

/** True when `token` has our shape and a matching checksum (it may still be unknown or revoked). */
export function isWellFormedToken(token: string): boolean {
  if (!token.startsWith(TOKEN_PREFIX) || token.length !== TOKEN_PREFIX.length + BODY_LENGTH + CHECK_LENGTH)
    return false;
  const body = token.slice(TOKEN_PREFIX.length, TOKEN_PREFIX.length + BODY_LENGTH);
  if (!/^[0-9A-Za-z]+$/.test(body)) return false;
  return checksum(body) === token.slice(TOKEN_PREFIX.length + BODY_LENGTH);
}

/** SHA-256 hex of the whole token: the only form kept at rest. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Creates and stores a token for `userId`; returns the record and the token, which is never retrievable again. */
export function issueToken(tokens: TokensRepo, userId: string, name: string): { record: TokenRecord; token: string } {
  const token = generateToken();
  const record = tokens.insert({ id: randomUUID(), userId, name, prefix: token.slice(0, 10), hash: hashToken(token) });
  return { record, token };
}

/** How often a token's `lastUsedAt` is rewritten at most (DESIGN.md §4: once a minute). */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * Verifier for `wh_` API tokens: checks the shape and checksum, looks the token and its user up by its SHA-256
 * (one query: this runs on every request), and rejects revoked tokens and disabled users (401 `Invalid or revoked
 * API token`). Nothing is cached: a revocation or a disabled user, from this process or the CLI, counts from the
 * next request. Records use at most once a minute (skipped, not refused, while the database stays locked).
 */
export function apiTokenVerifier(
  store: Pick<Store, 'tokens' | 'users' | 'atomic'>,
  now: () => Date = () => new Date(),
): CredentialVerifier {
  return {
    kind: 'api-token',
    claims: (token) => token.startsWith(TOKEN_PREFIX),
    async verify(token) {
      const found = isWellFormedToken(token) ? store.tokens.credentialByHash(hashToken(token)) : undefined;
      if (!found || found.userDisabled) throw unauthorized(AUTH_MESSAGES.invalidApiToken);
      const at = now();
      if (!found.lastUsedAt || at.getTime() - Date.parse(found.lastUsedAt) >= LAST_USED_RESOLUTION_MS) {
        try {
          store.atomic(() => store.tokens.touch(found.tokenId, at.toISOString())); // holds the threads' write lock
        } catch (err) {
          // A record of use is not worth refusing the request: with the database locked past the main thread's
          // wait, the next request records it.
          if (!isBusyError(err)) throw err;
        }
      }
      return { id: found.userId, name: found.userName, credential: { kind: 'api-token', tokenId: found.tokenId } };
    },
  };
}
