/**
 * Standard Webhooks v1 signatures (HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}`), compatible with
 * the `standardwebhooks` libraries; secrets are `whsec_` + base64 of 32 random bytes, one per webhook.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

export function generateSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** The secret's key bytes (the base64 part after `whsec_`). */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** The `webhook-signature` header value `v1,<base64>`; `timestamp` in Unix seconds. */
export function signPayload(key: Buffer, msgId: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', key).update(`${msgId}.${timestamp}.${body}`).digest('base64')}`;
}

/** The three Standard Webhooks headers for one attempt (a fresh timestamp each time). */
export function signatureHeaders(key: Buffer, msgId: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signPayload(key, msgId, timestamp, body),
  };
}
