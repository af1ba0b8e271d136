import type { z } from 'zod';
import { exampleFromSent } from '../../../core/http/sent-example';

/**
 * A refused verify body made into its example (exampleFromSent): a refused or missing proposed_price replaced by the
 * example's, the alias `price` dropped when sent beside proposed_price, any other refused field left out. A caller who
 * sent 4.5 and a bad context sees its own 4.5 back, not the route's "4.50".
 */
export function verifyExampleFor(schema: z.ZodType, example: { context: unknown; proposed_price: unknown }): (sent: unknown) => unknown {
  return (sent) =>
    exampleFromSent(schema, sent, example.context, {
      field(out, name) {
        if (name === 'proposed_price' || name === 'price') {
          // Refused, or neither was sent (the issue names proposed_price), or both were (it names price).
          if (name === 'proposed_price' || out.proposed_price === undefined) out.proposed_price = example.proposed_price;
          return delete out.price;
        }
        return delete out[name];
      },
    });
}
