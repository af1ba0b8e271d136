import { z } from 'zod';
import { ApiError } from '../../core/errors';
import { defineRoute, ok } from '../../core/http/route';
import type { PluginDefinition } from '../../core/plugin';

/** A test-only plugin with routes that exercise the kernel's pipeline. */
export function probePlugin(opts: { name?: string; dependsOn?: string[]; slowMs?: number; onSlowStarted?: () => void } = {}): PluginDefinition {
  const name = opts.name ?? 'probe';
  return {
    name,
    description: 'test probe',
    dependsOn: opts.dependsOn ?? [],
    migrations: [
      {
        name: '0001-create-probe',
        up: async ({ queryInterface }) => {
          await queryInterface.sequelize.query(`CREATE TABLE IF NOT EXISTS ${name}_items (id text PRIMARY KEY, label text NOT NULL)`);
        },
      },
    ],
    register(ctx) {
      ctx.route(
        defineRoute({
          id: `${name}.create`,
          method: 'post',
          path: `/${name}/items`,
          summary: 'create an item',
          auth: 'public',
          body: z.strictObject({ label: z.string().min(1).max(40), quantity: z.number().int().positive().optional() }),
          example: { label: 'widget', quantity: 2 },
          handler: ({ body }) => ok({ created: body }),
        }),
      );
      ctx.route(
        defineRoute({
          id: `${name}.get`,
          method: 'get',
          path: `/${name}/items/:id`,
          summary: 'read an item',
          auth: 'public',
          params: z.object({ id: z.string().regex(/^[a-z0-9]+$/) }),
          query: z.object({ verbose: z.enum(['true', 'false']).optional() }),
          handler: ({ params, query }) => ok({ id: params.id, verbose: query.verbose === 'true' }),
        }),
      );
      ctx.route(
        defineRoute({
          id: `${name}.fail`,
          method: 'get',
          path: `/${name}/fail/:kind`,
          summary: 'fail on purpose',
          auth: 'public',
          handler: ({ req }) => {
            if (req.params.kind === 'api') {
              throw new ApiError('rate_limited', 'Slow down.', { hint: 'wait', retry_after: 7, limit: { per_minute: 10 }, next: [{ action: 'retry', method: 'GET', path: '/probe/fail/api' }] });
            }
            throw new Error('secret internal detail');
          },
        }),
      );
      ctx.route(
        defineRoute({
          id: `${name}.slow`,
          method: 'get',
          path: `/${name}/slow`,
          summary: 'answer after a delay',
          auth: 'public',
          handler: async () => {
            opts.onSlowStarted?.();
            await new Promise((r) => setTimeout(r, opts.slowMs ?? 300));
            return ok({ slow: true });
          },
        }),
      );
      ctx.route(
        defineRoute({
          id: `${name}.private`,
          method: 'get',
          path: `/${name}/private`,
          summary: 'needs credentials (default policy)',
          handler: ({ principal }) => ok({ workspace: principal?.workspaceId }),
        }),
      );
    },
  };
}
