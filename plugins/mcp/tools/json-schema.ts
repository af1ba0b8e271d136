import { z } from 'zod';

/** JSON Schema of a zod schema, the same one REST validates with. */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return { ...out, type: 'object' };
}
