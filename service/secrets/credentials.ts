/**
 * Credentials recognised by their shape, so text about to be logged can be cleaned of them wherever a client put
 * them (a path segment, any query parameter, any header) and however it encoded them. The logger runs every line
 * through `redactCredentials` (config/logger.ts), and the request log its URLs (http/plugins/request-log.ts).
 *
 * Shapes:
 * - an API token (the format is defined here; auth/api-tokens.ts issues and checks them, docs/auth.md):
 *   `wh_` + 43 base62 characters + a 6-character base62 CRC32 of those. Redaction does not ask for a valid
 *   checksum: a mistyped or truncated-and-extended token still gives most of a real one away, and nothing that
 *   is not a credential looks like this;
 * - a JWT (compact JWS, what the JWT verifier accepts): three base64url parts, the first two JSON objects, so both
 *   begin with `eyJ`.
 *
 * Encodings: the text as is, percent-encoded (any characters, any case, also encoded twice or three times:
 * `%2577h_…`), and the bytes of a Buffer as JSON writes it (`{"type":"Buffer","data":[119,104,…]}`).
 */

/** The API token format: `prefix` + `bodyLength` base62 characters + a `checkLength`-character base62 checksum. */
export const API_TOKEN_FORMAT = {
  prefix: 'wh_',
  alphabet: '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
  bodyLength: 43,
  checkLength: 6,
} as const;

export const REDACTED = '[redacted]';

const { prefix, bodyLength, checkLength } = API_TOKEN_FORMAT;
const SHAPES = `${prefix}[0-9A-Za-z]{${bodyLength + checkLength}}|eyJ[0-9A-Za-z_-]{6,}\\.eyJ[0-9A-Za-z_-]{6,}\\.[0-9A-Za-z_-]*`;
const SHAPE = new RegExp(SHAPES);
const SHAPE_ALL = new RegExp(SHAPES, 'g');
/** The shortest text a shape matches (a JWT: `eyJ` + 6, `.eyJ` + 6, `.`). */
const MIN_SHAPE_LENGTH = 20;
/** A Buffer as JSON.stringify writes it. */
const JSON_BUFFER = /\{"type":"Buffer","data":\[([0-9,]*)\]\}/g;

/** `%XX` escapes decoded as Latin-1 characters, repeated while anything changes (at most 3 times). */
function percentDecoded(text: string): string {
  let out = text;
  for (let i = 0; i < 3; i++) {
    const next = out.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === out) break;
    out = next;
    if (!out.includes('%')) break;
  }
  return out;
}

/** Whether the UTF-16 code `c` may be part of a URL-encoded credential: `[0-9A-Za-z_.~%-]`. */
function isRunChar(c: number): boolean {
  return (
    (c >= 48 && c <= 57) ||
    (c >= 65 && c <= 90) ||
    (c >= 97 && c <= 122) ||
    c === 95 ||
    c === 46 ||
    c === 126 ||
    c === 37 ||
    c === 45
  );
}

/**
 * `text` with each run of URL characters around a `%` replaced by `[redacted]` when its percent-decoding holds a
 * credential. Scans outwards from each `%` (linear; a regex over every run of the line costs ~20× more).
 */
function redactEncoded(text: string): string {
  let out = '';
  let copied = 0; // text[0, copied) is in `out` or redacted
  let scanned = 0; // runs end at or before here
  for (let i = text.indexOf('%'); i >= 0; i = text.indexOf('%', scanned)) {
    let start = i;
    while (start > scanned && isRunChar(text.charCodeAt(start - 1))) start--;
    let end = i + 1;
    while (end < text.length && isRunChar(text.charCodeAt(end))) end++;
    scanned = end;
    if (end - start >= MIN_SHAPE_LENGTH && SHAPE.test(percentDecoded(text.slice(start, end)))) {
      out += text.slice(copied, start) + REDACTED;
      copied = end;
    }
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * `text` with every credential (see the module doc) replaced by `[redacted]`: a plain one alone, a percent-encoded
 * one with the whole run of URL characters around it (its bounds are not known before decoding), a Buffer holding
 * one as a whole (`"[redacted]"`). Text without any is returned as it was (the same string).
 */
export function redactCredentials(text: string): string {
  let out = text.replace(SHAPE_ALL, REDACTED);
  if (out.includes('%')) out = redactEncoded(out);
  if (out.includes('"type":"Buffer"')) {
    out = out.replace(JSON_BUFFER, (json, bytes: string) => {
      const latin1 = Buffer.from(bytes.split(',').map(Number)).toString('latin1');
      return redactCredentials(latin1) === latin1 ? json : `"${REDACTED}"`;
    });
  }
  return out;
}
