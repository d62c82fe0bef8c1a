/** A JSON request to the API or the sandbox admin API, for end-to-end and fault tests. */

/** Parsed JSON bodies in tests are read loosely (the assertions check their shape). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type LooseJson = any;

/**
 * `method base+route` with an optional JSON `body` and Bearer `token`; resolves with the status and the parsed
 * body (undefined for an empty one).
 */
export async function jsonCall(
  base: string,
  method: string,
  route: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; body: LooseJson }> {
  const res = await fetch(`${base}${route}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as LooseJson) : undefined };
}
