import { ApiError } from '../../../core/errors';
import { defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import type { Principal } from '../../../core/auth';
import { healthCallerOfPrincipal } from '../services/caller-scope';
import { signingRotationResponse } from '../responses-functions';
import * as s from '../schemas';
import { functionView, notFound, ownedFunction } from './functions';
import type { FunctionRouteDeps } from './functions';

/**
 * POST /api/functions/{id}/signing-secret: an external function's owner moves it to a new signing secret, for one that
 * leaked or on a schedule. The previous secret ends at once: an endpoint that checks signatures takes the new one first.
 */
export function functionSigningRoutes(d: FunctionRouteDeps): RouteSpec[] {
  return [
    defineRoute({
      id: 'functions.rotate_signing_secret',
      method: 'post',
      path: '/api/functions/:id/signing-secret',
      summary: "Owners and admins: a new signing secret for an external_api function's requests (the previous one ends at once).",
      tags: ['Functions'],
      fullAccess: true,
      returnsSecret: true,
      params: s.idParams,
      responses: { 200: { description: 'The function and its new signing secret, with how requests are signed.', schema: signingRotationResponse } },
      handler: async ({ principal, params }) => {
        const p = principal as Principal;
        const fn = await ownedFunction(d, p, params.id);
        if (fn.executionType !== 'external_api') {
          throw new ApiError('validation_error', `${fn.name} is a ${fn.executionType} function: only external_api functions sign their requests.`, {
            issues: [{ path: 'id', reason: 'an external_api function' }],
            hint: 'Register an external_api function (POST /api/functions) to price at an endpoint of yours; its registration answers its signing secret.',
          });
        }
        const rotated = await d.store.rotateSigning(fn.id, p.workspaceId);
        if (!rotated) throw notFound();
        await d.registry.changed(rotated.id);
        return ok({ function: functionView(rotated, d, p.workspaceId, healthCallerOfPrincipal(p)), ...d.signing.shown(rotated) });
      },
    }),
  ];
}
