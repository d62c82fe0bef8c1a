/** Host header parsing shared by the API's and the sandbox's DNS-rebinding guards. */

/** `{ name, port }` of a Host header value; undefined when it is not one. */
export function parseHost(value: string | undefined): { name: string; port: number | undefined } | undefined {
  const m = value === undefined ? null : /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s/@]+)(?::(\d{1,5}))?$/.exec(value);
  if (!m) return undefined;
  return { name: m[1]!.toLowerCase().replace(/\.$/, ''), port: m[2] === undefined ? undefined : Number(m[2]) };
}
