/**
 * Request validation at the edge: TypeBox schemas compiled with TypeBox's TypeCompiler.
 *
 * Fastify's built-in Ajv takes one global set of options, but the parts of a request need different ones:
 * bodies are JSON and are checked strictly (no `123` → `"123"` coercion, unknown fields rejected, not dropped),
 * while querystrings and path params arrive as strings and need exact scalar coercion (`"50"` → 50,
 * `"true"` → true; `"5.5"` stays a string and fails an integer). Defaults from the schema are applied.
 *
 * Errors are 400s whose message names the field, e.g. `body/chatId must be string`, `querystring/limit must be <= 500`.
 */
import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import type { FastifySchemaCompiler } from 'fastify';

interface JsonSchemaLike {
  type?: string;
  properties?: Record<string, JsonSchemaLike>;
  anyOf?: JsonSchemaLike[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
}

/** Fastify validator compiler for TypeBox route schemas (see the file header for the rules). */
export const typeBoxValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = TypeCompiler.Compile(schema);
  const part = httpPart ?? 'request';
  const fromStrings = part !== 'body';
  const applyDefaults = defaultsOf(schema);
  return (input: unknown) => {
    // A POST without a body is an empty object, so optional-only bodies may be omitted.
    let value = input ?? (part === 'body' ? {} : input);
    if (fromStrings) value = coerceStringFields(schema as JsonSchemaLike, value);
    value = applyDefaults(value);
    if (check.Check(value)) return { value };
    const first = check.Errors(value).First();
    const error = new Error(first ? describe(part, first) : `${part} is invalid`);
    return { error };
  };
};

/**
 * `Value.Default(schema, ·)`, or an equivalent shortcut for the common shape of params and querystrings: an object
 * whose only defaults are scalars on its own properties (TypeBox then sets each missing one to its default and
 * leaves everything else as it is). Value.Default walks and clones the whole schema on every request.
 */
function defaultsOf(schema: TSchema): (value: unknown) => unknown {
  const general = (value: unknown) => Value.Default(schema, value);
  const s = schema as JsonSchemaLike & { default?: unknown; additionalProperties?: unknown };
  if (s.type !== 'object' || !s.properties || 'default' in s) return general;
  const defaults: Array<[string, unknown]> = [];
  for (const [key, prop] of Object.entries(s.properties)) {
    const d = (prop as { default?: unknown }).default;
    if (d !== undefined && (typeof d === 'string' || typeof d === 'number' || typeof d === 'boolean')) defaults.push([key, d]);
  }
  // Any other default (nested, non-scalar, on additionalProperties): TypeBox's own walk.
  if (countDefaults(schema) !== defaults.length) return general;
  if (defaults.length === 0) return (value) => value;
  return (value) => {
    if (!isRecord(value)) return value;
    for (const [key, d] of defaults) if (value[key] === undefined) value[key] = d;
    return value;
  };
}

/** How many `default` keywords `schema` holds, at any depth. */
function countDefaults(schema: unknown): number {
  if (Array.isArray(schema)) return schema.reduce((n: number, x) => n + countDefaults(x), 0);
  if (typeof schema !== 'object' || schema === null) return 0;
  let n = 'default' in schema ? 1 : 0;
  for (const v of Object.values(schema)) n += countDefaults(v);
  return n;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Converts the top-level string fields of a querystring/params object to the scalar types their schema asks for. */
function coerceStringFields(schema: JsonSchemaLike, data: unknown): unknown {
  if (!isRecord(data) || !schema.properties) return data;
  const out: Record<string, unknown> = { ...data };
  for (const [key, prop] of Object.entries(schema.properties)) {
    const v = out[key];
    if (typeof v === 'string') out[key] = coerceScalar(prop.type, v);
  }
  return out;
}

function coerceScalar(type: string | undefined, v: string): unknown {
  switch (type) {
    case 'integer':
      return /^-?\d{1,15}$/.test(v) ? Number(v) : v;
    case 'number':
      return /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
    case 'boolean':
      return v === 'true' ? true : v === 'false' ? false : v;
    default:
      return v;
  }
}

function typeNames(schema: JsonSchemaLike): string {
  if (schema.anyOf) return schema.anyOf.map(typeNames).join(' or ');
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  return schema.type ?? 'valid';
}

/** `body/chatId must be string`-style message for the first validation error. */
function describe(part: string, e: ValueError): string {
  const where = part + e.path;
  const s = e.schema as JsonSchemaLike;
  switch (e.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return `${where} is required`;
    case ValueErrorType.ObjectAdditionalProperties:
      return `${where} is not allowed`;
    case ValueErrorType.String:
    case ValueErrorType.Integer:
    case ValueErrorType.Number:
    case ValueErrorType.Boolean:
    case ValueErrorType.Object:
    case ValueErrorType.Array:
    case ValueErrorType.Null:
    case ValueErrorType.Literal:
    case ValueErrorType.Union:
      return `${where} must be ${typeNames(s)}`;
    case ValueErrorType.StringMinLength:
      return s.minLength === 1
        ? `${where} must not be empty`
        : `${where} must be at least ${s.minLength} characters long`;
    case ValueErrorType.StringMaxLength:
      return `${where} must be at most ${s.maxLength} characters long`;
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.NumberMinimum:
      return `${where} must be >= ${s.minimum}`;
    case ValueErrorType.IntegerMaximum:
    case ValueErrorType.NumberMaximum:
      return `${where} must be <= ${s.maximum}`;
    case ValueErrorType.StringPattern:
      return `${where} must match pattern ${JSON.stringify(s.pattern)}`;
    default:
      return `${where} ${e.message.charAt(0).toLowerCase()}${e.message.slice(1)}`;
  }
}
