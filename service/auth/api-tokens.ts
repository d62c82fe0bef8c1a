/**
 * API token format (docs/architecture.md § API tokens): `wh_` + base62(32 random bytes) + 6-char base62 CRC32 of the
 * random part. The checksum lets us reject typos and foreign strings without a database lookup (and lets secret
 * scanners recognise our tokens). Tokens are stored as SHA-256 hex; the display prefix is the first 10 characters.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { isBusyError, type Store } from '../db/store.ts';
import { API_TOKEN_FORMAT } from '../secrets/credentials.ts';
import type { TokenRecord, TokensRepo } from '../db/tokens.ts';
import { AUTH_MESSAGES, unauthorized, type CredentialVerifier } from './authenticate.ts';

// The format is defined with the log redaction that recognises it (secrets/credentials.ts).
const ALPHABET = API_TOKEN_FORMAT.alphabet;
export const TOKEN_PREFIX = API_TOKEN_FORMAT.prefix;
const BODY_LENGTH = API_TOKEN_FORMAT.bodyLength; // ceil(256 bits / log2(62))
const CHECK_LENGTH = API_TOKEN_FORMAT.checkLength;

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

/**
 * Creates and stores a token for `userId`; returns the record and the token, which is never retrievable again.
 * `tokens` is the SQLite repository (the record) or either engine's asynchronous one (a Promise of it: await it).
 */
export function issueToken<R extends TokenRecord | Promise<TokenRecord> = TokenRecord>(
  tokens: { insert: (t: Parameters<TokensRepo['insert']>[0]) => R },
  userId: string,
  name: string,
): { record: R; token: string } {
  const token = generateToken();
  const record = tokens.insert({ id: randomUUID(), userId, name, prefix: token.slice(0, 10), hash: hashToken(token) });
  return { record, token };
}

/** How often a token's `lastUsedAt` is rewritten at most (docs/architecture.md § API tokens: once a minute). */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * The data dir of the other mode (live ↔ sandbox: separate databases), whose tokens a 401 may point at: `mode` is
 * that data dir's mode, `tokens` its read-only look-up (db/peer-tokens.ts).
 */
export interface OtherModeTokens {
  mode: 'live' | 'sandbox';
  tokens: { hasActive(hash: string): boolean };
}

/**
 * The 401 message for a token that is active in the other mode's data dir: the spec's `Invalid or revoked API
 * token`, then what to do. It says nothing else about the token or its user.
 */
export function otherModeTokenMessage(mode: OtherModeTokens['mode']): string {
  return mode === 'live'
    ? `${AUTH_MESSAGES.invalidApiToken}: this token belongs to the live data dir and this service runs in sandbox mode; ` +
        'start it without --sandbox, or create a sandbox token (token create --sandbox)'
    : `${AUTH_MESSAGES.invalidApiToken}: this token belongs to the sandbox data dir and this service runs in live mode; ` +
        'start it with --sandbox, or create a live token (token create without --sandbox)';
}

/**
 * Verifier for `wh_` API tokens: checks the shape and checksum, looks the token and its user up by its SHA-256
 * (one query: this runs on every request), and rejects revoked tokens and disabled users (401 `Invalid or revoked
 * API token`). Nothing is cached: a revocation or a disabled user, from this process or the CLI, counts from the
 * next request. Records use at most once a minute (skipped, not refused, while the database stays locked).
 * With `otherMode`, a well-formed token unknown here that is active in the other mode's data dir gets
 * otherModeTokenMessage instead (the look-up runs on that 401 path only).
 */
export function apiTokenVerifier(
  store: Pick<Store, 'tokens' | 'users' | 'atomic'>,
  now: () => Date = () => new Date(),
  otherMode?: OtherModeTokens,
): CredentialVerifier {
  return {
    kind: 'api-token',
    claims: (token) => token.startsWith(TOKEN_PREFIX),
    async verify(token) {
      const hash = isWellFormedToken(token) ? hashToken(token) : undefined;
      const found = hash === undefined ? undefined : store.tokens.credentialByHash(hash);
      if (!found && hash !== undefined && otherMode?.tokens.hasActive(hash)) {
        throw unauthorized(otherModeTokenMessage(otherMode.mode));
      }
      if (!found || found.userDisabled) throw unauthorized(AUTH_MESSAGES.invalidApiToken);
      const at = now();
      if (!found.lastUsedAt || at.getTime() - Date.parse(found.lastUsedAt) >= LAST_USED_RESOLUTION_MS) {
        try {
          // Only tries the threads' write lock on the main thread (it never waits for it there: store.ts txAsync).
          store.atomic(() => store.tokens.touch(found.tokenId, at.toISOString()));
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
