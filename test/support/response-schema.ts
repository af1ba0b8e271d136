import { expect } from 'chai';
import { z } from 'zod';
import type { TestService } from './service';

/**
 * The schema route `id` declares for `status` in the OpenAPI document, strict at the top level: a
 * field an answer has and the schema lacks fails the parse, so no field reaches an answer without
 * its description.
 */
export function declaredSchema(svc: TestService, id: string, status = 200): z.ZodObject {
  const schema = svc.routes.find(id)?.responses?.[status]?.schema;
  expect(schema, `${id} declares a ${status} schema`).to.be.instanceOf(z.ZodObject);
  return (schema as z.ZodObject).strict();
}

/**
 * Paths in `value` holding a key that no object of `schema` declares, at any depth (declaredSchema
 * is strict at the top level only): a nested field without its description fails too. Open objects
 * (looseObject) and records declare every key.
 */
export function undeclared(schema: z.ZodType, value: unknown, at = '$'): string[] {
  if (value === undefined || value === null) return [];
  const def = (schema as unknown as { _zod: { def: Record<string, any> } })._zod.def;
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'readonly':
      return undeclared(def.innerType, value, at);
    case 'pipe':
      return undeclared(def.in, value, at);
    case 'array':
      return Array.isArray(value) ? value.flatMap((v, i) => undeclared(def.element, v, `${at}[${i}]`)) : [];
    case 'union': {
      const fits = (def.options as z.ZodType[]).find((o) => o.safeParse(value).success);
      return fits ? undeclared(fits, value, at) : [];
    }
    case 'record':
      return typeof value === 'object' ? Object.entries(value).flatMap(([k, v]) => undeclared(def.valueType, v, `${at}.${k}`)) : [];
    case 'object': {
      if (typeof value !== 'object' || Array.isArray(value)) return [];
      const shape = def.shape as Record<string, z.ZodType>;
      const open = def.catchall !== undefined && def.catchall._zod.def.type !== 'never';
      return Object.entries(value).flatMap(([k, v]) => (shape[k] ? undeclared(shape[k], v, `${at}.${k}`) : open ? [] : [`${at}.${k}`]));
    }
    default:
      return [];
  }
}

/**
 * Parses a real answer with what route `id` declares for `status`, naming every field that does not fit; `anyDepth` also
 * refuses a nested field no object of the schema declares (undeclared).
 */
export function expectFitsDeclared(svc: TestService, id: string, body: unknown, status = 200, opts: { anyDepth?: boolean } = {}): void {
  const schema = declaredSchema(svc, id, status);
  const parsed = schema.safeParse(body);
  expect(parsed.success, parsed.success ? '' : `${id} ${status}: ${JSON.stringify(parsed.error.issues)}`).to.equal(true);
  if (opts.anyDepth) expect(undeclared(schema, body), `${id} ${status}: fields without a schema`).to.deep.equal([]);
}
