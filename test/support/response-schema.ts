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

/** Parses a real answer with what route `id` declares for `status`, naming every field that does not fit. */
export function expectFitsDeclared(svc: TestService, id: string, body: unknown, status = 200): void {
  const parsed = declaredSchema(svc, id, status).safeParse(body);
  expect(parsed.success, parsed.success ? '' : `${id} ${status}: ${JSON.stringify(parsed.error.issues)}`).to.equal(true);
}
