/** Pure pieces of the HTTP edge: bearer parsing, log redaction, validation messages, the CLI table. */
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { generateToken } from '../../service/auth/api-tokens.ts';
import { bearerToken } from '../../service/auth/authenticate.ts';
import { formatTable } from '../../service/cli/token.ts';
import { redactUrl } from '../../service/http/plugins/request-log.ts';
import { typeBoxValidatorCompiler } from '../../service/http/validation.ts';
import { redactCredentials } from '../../service/secrets/credentials.ts';

describe('bearerToken', () => {
  it.each([
    ['Bearer wh_abc', 'wh_abc'],
    ['bearer wh_abc', 'wh_abc'],
    ['Bearer   wh_abc  ', 'wh_abc'],
    [undefined, undefined],
    ['', undefined],
    ['Bearer', undefined],
    ['Bearer ', undefined],
    ['Basic wh_abc', undefined],
    ['Bearer a b', undefined],
    ['Bearer wh_ä', undefined],
  ])('%j → %j', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });
});

describe('redactUrl', () => {
  it('replaces every token query value', () => {
    expect(redactUrl('/api/ws?token=wh_secret&after=3')).toBe('/api/ws?token=[redacted]&after=3');
    expect(redactUrl('/api/ws?after=3&TOKEN=wh_secret')).toBe('/api/ws?after=3&TOKEN=[redacted]');
    expect(redactUrl('/api/connections?mytoken=x')).toBe('/api/connections?mytoken=x');
  });

  it.each([
    ['/api/ws?%74oken=wh_secret', '/api/ws?%74oken=[redacted]'],
    ['/api/ws?%54%4F%4B%45%4E=wh_secret', '/api/ws?%54%4F%4B%45%4E=[redacted]'],
    ['/api/ws?token%3Dwh_secret', '/api/ws?[redacted]'],
    ['/api/ws?%74oken%3dwh_secret&after=1', '/api/ws?[redacted]&after=1'],
    ['/api/ws?%2574oken=wh_secret', '/api/ws?%2574oken=[redacted]'],
    ['/api/ws?TOKEN=wh_secret', '/api/ws?TOKEN=[redacted]'],
    ['/api/ws?token=wh_a&token=wh_b&Token=wh_c', '/api/ws?token=[redacted]&token=[redacted]&Token=[redacted]'],
    ['/api/ws?after=1;token=wh_secret;x=2', '/api/ws?after=1;token=[redacted];x=2'],
    ['/api/ws?tok+en=other', '/api/ws?tok+en=other'],
    ['/api/ws?+token=wh_secret#frag', '/api/ws?+token=[redacted]'],
    ['/api/ws?token', '/api/ws?[redacted]'],
    ['/api/ws?token=a=b', '/api/ws?token=[redacted]'],
    ['/api/ws?%zz=1&token=wh_secret', '/api/ws?%zz=1&token=[redacted]'],
    ['/api/ws?a=%74oken', '/api/ws?a=%74oken'],
    ['/api/ws', '/api/ws'],
  ])('%s → %s', (url, redacted) => {
    expect(redactUrl(url)).toBe(redacted);
    expect(redactUrl(url)).not.toContain('wh_');
  });
});

describe('credentials by shape (redactUrl, redactCredentials)', () => {
  const token = generateToken();
  const pct = (s: string) =>
    [...Buffer.from(s)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  const jwt = `eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.${'s'.repeat(40)}`;

  it.each([
    [`/api/connections/${token}`, '/api/connections/[redacted]'],
    [`/api/connections/${token}/messages?limit=5`, '/api/connections/[redacted]/messages?limit=5'],
    [`/api/connections?access_token=${token}`, '/api/connections?access_token=[redacted]'],
    [`/api/connections?foo=${token}&limit=2`, '/api/connections?foo=[redacted]&limit=2'],
    [`/api/connections?token[]=${token}`, '/api/connections?token[]=[redacted]'],
    [`/api/connections?to%00ken=${token}`, '/api/connections?to%00ken=[redacted]'],
    [`/api/connections?${token}`, '/api/connections?[redacted]'],
    [`/api/connections?foo=${pct(token)}`, '/api/connections?foo=[redacted]'],
    [`/api/connections?foo=${pct(token).toLowerCase()}`, '/api/connections?foo=[redacted]'],
    [`/api/connections?foo=${pct(token).replace(/%/g, '%25')}`, '/api/connections?foo=[redacted]'],
    [`/api/connections?foo=wh%5F${token.slice(3)}`, '/api/connections?foo=[redacted]'],
    [`/api/connections/${pct(token)}`, '/api/connections/[redacted]'],
    [`/api/connections?foo=x${token}y`, '/api/connections?foo=x[redacted]y'],
    [`/api/connections/${jwt}`, '/api/connections/[redacted]'],
  ])('%s → %s', (url, redacted) => {
    expect(redactUrl(url)).toBe(redacted);
  });

  it('needs the whole shape; a valid checksum is not required, other text is left alone', () => {
    const mistyped = token.slice(0, 10) + (token[10] === 'a' ? 'b' : 'a') + token.slice(11);
    expect(redactCredentials(`x ${mistyped} y`)).toBe('x [redacted] y');
    const short = token.slice(0, -1);
    for (const text of [
      short,
      `/api/connections/${'a'.repeat(60)}`,
      '/api/ws?after=%20x',
      'wh_',
      `WH_${token.slice(3)}`,
    ]) {
      expect(redactCredentials(text)).toBe(text);
    }
  });

  it('finds one in the JSON of a Buffer', () => {
    const line = JSON.stringify({
      err: { rawPacket: Buffer.from(`GET / HTTP/1.1\r\nX-Api-Key: ${token}\r\n`), other: Buffer.from('ok') },
    });
    expect(redactCredentials(line)).toBe(
      JSON.stringify({ err: { rawPacket: '[redacted]', other: Buffer.from('ok') } }),
    );
  });
});

describe('typeBoxValidatorCompiler', () => {
  const body = Type.Object(
    {
      chatId: Type.String({ minLength: 1 }),
      count: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
      mode: Type.Optional(Type.Union([Type.Literal('a'), Type.Literal('b')])),
      name: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    },
    { additionalProperties: false },
  );
  const query = Type.Object({
    limit: Type.Integer({ minimum: 1, default: 50 }),
    flag: Type.Boolean({ default: false }),
    n: Type.Optional(Type.Number()),
  });
  const validate = (schema: typeof body | typeof query, part: string, data: unknown) =>
    typeBoxValidatorCompiler({ schema, httpPart: part, method: 'POST', url: '/x' })(data) as {
      value?: unknown;
      error?: Error;
    };

  it.each([
    [{}, 'body/chatId is required'],
    [{ chatId: 1 }, 'body/chatId must be string'],
    [{ chatId: '' }, 'body/chatId must not be empty'],
    [{ chatId: 'x', count: '2' }, 'body/count must be integer'],
    [{ chatId: 'x', count: 9 }, 'body/count must be <= 5'],
    [{ chatId: 'x', mode: 'c' }, 'body/mode must be "a" or "b"'],
    [{ chatId: 'x', name: 3 }, 'body/name must be string or null'],
    [{ chatId: 'x', extra: true }, 'body/extra is not allowed'],
    [null, 'body/chatId is required'],
    ['x', 'body must be object'],
  ])('body %j → %s (no coercion, nothing dropped)', (data, message) => {
    expect(validate(body, 'body', data).error?.message).toBe(message);
  });

  it('passes a valid body through unchanged', () => {
    expect(validate(body, 'body', { chatId: 'x', count: 2 })).toEqual({ value: { chatId: 'x', count: 2 } });
  });

  it('coerces exact scalar strings in querystrings and applies defaults', () => {
    expect(validate(query, 'querystring', { limit: '10', flag: 'true', n: '1.5' })).toEqual({
      value: { limit: 10, flag: true, n: 1.5 },
    });
    expect(validate(query, 'querystring', {})).toEqual({ value: { limit: 50, flag: false } });
    expect(validate(query, 'querystring', { limit: '1.5' }).error?.message).toBe('querystring/limit must be integer');
    expect(validate(query, 'querystring', { limit: '' }).error?.message).toBe('querystring/limit must be integer');
    expect(validate(query, 'querystring', { flag: '1' }).error?.message).toBe('querystring/flag must be boolean');
  });

  it("applies defaults exactly as TypeBox's Value.Default does, flat (the shortcut) or nested", () => {
    const nested = Type.Object({
      limit: Type.Integer({ default: 50 }),
      inner: Type.Optional(Type.Object({ on: Type.Boolean({ default: true }) })),
      list: Type.Optional(Type.Array(Type.String(), { default: [] })),
    });
    const inputs = [{}, { limit: 3 }, { limit: null }, { flag: true }, { n: 2, extra: 'x' }, { inner: {} }, { inner: { on: false } }, { list: ['a'] }];
    for (const schema of [query, nested]) {
      for (const input of inputs) {
        const expected = Value.Default(schema, structuredClone(input));
        const got = validate(schema as typeof query, 'body', structuredClone(input));
        expect(got.value ?? (got.error && expected)).toEqual(expected);
      }
    }
  });
});

describe('formatTable', () => {
  it('pads columns to the widest cell', () => {
    expect(
      formatTable(
        ['ID', 'NAME'],
        [
          ['1', 'alpha'],
          ['22', '-'],
        ],
      ),
    ).toBe('ID  NAME\n1   alpha\n22  -\n');
  });
});
