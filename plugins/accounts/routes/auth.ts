import { ApiError, isApiError, errorBodySchema } from '../../../core/errors';
import { created, defineRoute, ok } from '../../../core/http/route';
import type { Reply, RequestContext, RouteSpec } from '../../../core/http/route';
import { notOwnOrigin } from '../../../core/http/origin';
import { signInRefused, workspaceView } from '../../identity';
import * as r from '../responses';
import * as s from '../schemas';
import { personView } from '../services/people';
import type { PersonRow } from '../services/people';
import { clearedSessionCookie, secureSessionCookies, sessionCookie } from '../services/sessions';
import type { NewSession } from '../services/sessions';
import type { AccountsDeps } from './deps';
import { userAgentOf } from '../../../core/http/header-text';
import { dailyQuotaRefusal } from '../../../core/daily-quota';


export function signedInReply(d: AccountsDeps, person: PersonRow, session: NewSession, status: 200 | 201, extra: Record<string, unknown> = {}): Reply {
  return {
    status,
    // The routes declare returnsSecret: the session and its token go out with Cache-Control: no-store and Pragma: no-cache.
    headers: { 'Set-Cookie': sessionCookie(session.cookie, d.config.identity.sessionTtlHours * 3600, secureSessionCookies(d.config)) },
    body: {
      person: personView(person),
      session: { id: session.session.id, expires_at: new Date(session.session.expires_at).toISOString() },
      token: { access_token: session.token, token_type: 'Bearer', expires_in: d.sessions.tokenLifetimeS, use: 'Authorization: Bearer <access_token> (person token); browsers use the pcs_session cookie.' },
      ...extra,
    },
  };
}

/**
 * Signing in or up from a page of another site is refused before anything is read or counted: such a page could sign
 * its visitors in to an account it chose (a text/plain form post needs no preflight, and SameSite=Lax lets a top-level
 * post set the cookie), or spend its visitors' and the service's sign-ups. Programs send no Origin.
 */
function ownPagesOnly(d: AccountsDeps): (ctx: RequestContext) => undefined {
  return (ctx) => {
    if (ctx.req.method === 'POST' && notOwnOrigin(ctx.req, d.ownOrigin())) {
      throw new ApiError('forbidden', 'Signing in or up from a web page of another site is refused.', {
        hint: "Sign in from this service's own pages, or from a program (it sends no Origin header).",
        fields: { reason: 'page of another site' },
      });
    }
    return undefined;
  };
}

const CROSS_SITE = 'forbidden (reason "page of another site"): the request came from a web page of another site than the service\'s own.';

export function authRoutes(d: AccountsDeps): RouteSpec[] {
  return [
    defineRoute({
      id: 'auth.signup',
      screen: ownPagesOnly(d),
      method: 'post',
      path: '/api/auth/signup',
      summary: 'Sign up with email and password; creates your workspace (and its test workspace).',
      tags: ['People'],
      auth: 'public',
      returnsSecret: true,
      body: s.signupBody,
      example: s.signupExample,
      responses: {
        201: { description: 'The new person, their workspace and a signed-in session (cookie and token).', schema: r.signupResponse },
        403: { description: `forbidden: the date of birth is under the minimum age (reason "minimum age"); or ${CROSS_SITE}`, schema: errorBodySchema },
        429: dailyQuotaRefusal('SIGNUPS_PER_ADDRESS_PER_DAY sign-ups from this network address today, or SIGNUPS_PER_DAY on the whole service', true),
      },
      handler: async ({ body, clientIp, req }) => {
        const meta = { ip: clientIp, userAgent: userAgentOf(req) };
        // "An account with this email already exists" tells whoever asks that the email has an account: each such answer
        // counts as a rejected credential of the address, so sign-up cannot be used to test emails faster than sign-in.
        await d.failures.check(clientIp);
        const created = d.people.create(
          {
            email: body.email,
            password: body.password,
            displayName: body.display_name ?? body.email.split('@')[0] ?? 'person',
            dateOfBirth: body.date_of_birth,
            workspaceName: body.workspace_name,
            ip: clientIp,
          },
          (p, tx) => d.sessions.create(p.id, 'password', meta, tx),
        );
        const { person, workspace, session } = await created.catch(async (err: unknown) => {
          if (isApiError(err) && err.code === 'conflict') await d.failures.fail(clientIp);
          throw err;
        });
        return signedInReply(d, person, session, 201, { workspace: workspaceView(workspace) });
      },
    }),
    defineRoute({
      id: 'auth.signin',
      screen: ownPagesOnly(d),
      method: 'post',
      path: '/api/auth/signin',
      summary: 'Sign in with email and password: a session cookie and a person token.',
      tags: ['People'],
      auth: 'public',
      returnsSecret: true,
      body: s.signinBody,
      example: s.signinExample,
      responses: {
        200: { description: 'Signed in: the person, the session (its cookie in Set-Cookie) and a person token.', schema: r.signinResponse },
        401: { description: 'invalid_credentials: the email or the password is wrong (one answer for both); WWW-Authenticate carries the challenge, next lists sign_in, wallet_sign_in and sign_up.', schema: errorBodySchema },
        403: { description: CROSS_SITE, schema: errorBodySchema },
      },
      handler: async ({ body, clientIp, req }) => {
        const person = await d.failures.verify(clientIp, () => d.people.checkPassword(body.email, body.password));
        if (!person) {
          throw signInRefused('Email or password is wrong.', 'Check both; an account made by a wallet signs in with its wallet.');
        }
        const session = await d.sessions.create(person.id, 'password', { ip: clientIp, userAgent: userAgentOf(req) });
        return signedInReply(d, person, session, 200);
      },
    }),
    defineRoute({
      id: 'auth.signout',
      method: 'post',
      path: '/api/auth/signout',
      summary: 'End the current session.',
      tags: ['People'],
      // Ending the session ends every token bound to it, the full one answered at sign-in included: that is managing the
      // session, which a person token narrowed with POST /api/user/tokens may not do (as DELETE /api/user/sessions[/{id}]).
      // givesUpAccess still lets a suspended or rejected account's session or full token sign out.
      fullAccess: true,
      givesUpAccess: true,
      accepts: ['person'],
      responses: { 200: { description: 'Signed out; the cookie is cleared.', schema: r.signoutResponse } },
      handler: async ({ principal }): Promise<Reply> => {
        if (principal?.personId && principal.sessionId) await d.sessions.revoke(principal.personId, principal.sessionId);
        return { status: 200, headers: { 'Set-Cookie': clearedSessionCookie(secureSessionCookies(d.config)) }, body: { signed_out: true } };
      },
    }),
    defineRoute({
      id: 'auth.wallet.nonce',
      method: 'post',
      path: '/api/auth/wallet/nonce',
      summary: 'Sign-In with Ethereum: a one-time message naming the service, to sign with the wallet.',
      tags: ['People'],
      auth: 'public',
      body: s.walletNonceBody,
      example: s.walletNonceExample,
      responses: { 200: { description: 'The message to sign, with its one-time nonce.', schema: r.walletNonceResponse } },
      handler: async ({ body }) => ok(await d.wallets.challenge(body.address, body.chain_id ?? 1)),
    }),
    defineRoute({
      id: 'auth.wallet.signin',
      screen: ownPagesOnly(d),
      method: 'post',
      path: '/api/auth/wallet/signin',
      summary: 'Sign in with a signed Sign-In with Ethereum message (nothing on chain); the first sign-in creates the account.',
      tags: ['People'],
      auth: 'public',
      returnsSecret: true,
      body: s.walletSigninBody,
      example: s.walletSigninExample,
      responses: {
        200: { description: 'Signed in to the account the wallet is linked to.', schema: r.walletSigninResponse },
        201: { description: 'The wallet\'s first sign-in: a new account, linked to the wallet, and signed in.', schema: r.walletSigninResponse },
        403: { description: CROSS_SITE, schema: errorBodySchema },
        429: dailyQuotaRefusal('a new wallet\'s first sign-in creates an account, counted with sign-ups: SIGNUPS_PER_ADDRESS_PER_DAY from this network address today, or SIGNUPS_PER_DAY on the whole service', true),
      },
      handler: async ({ body, clientIp, req }) => {
        await d.failures.check(clientIp);
        let address: string;
        try {
          address = await d.wallets.verify(body.message, body.signature);
        } catch (err) {
          await d.failures.fail(clientIp);
          throw err;
        }
        const meta = { ip: clientIp, userAgent: userAgentOf(req) };
        const known = await d.people.byWallet(address);
        if (known) return signedInReply(d, known, await d.sessions.create(known.id, 'wallet', meta), 200, { wallet: address });
        if (!body.date_of_birth) {
          throw new ApiError('validation_error', 'A new wallet account needs date_of_birth.', {
            issues: [{ path: 'date_of_birth', reason: 'required the first time a wallet signs in' }],
            hint: 'Ask for a new message (the nonce was used) and send date_of_birth (YYYY-MM-DD) with the signature.',
          });
        }
        try {
          const created = await d.people.create({ displayName: `${address.slice(0, 6)}…${address.slice(-4)}`, dateOfBirth: body.date_of_birth, wallet: address, ip: clientIp }, (p, tx) =>
            d.sessions.create(p.id, 'wallet', meta, tx),
          );
          return signedInReply(d, created.person, created.session, 201, { wallet: address });
        } catch (err) {
          // A concurrent first sign-in of this wallet created the account: this one signs in to it.
          const winner = await d.people.byWallet(address);
          if (!winner) throw err;
          return signedInReply(d, winner, await d.sessions.create(winner.id, 'wallet', meta), 200, { wallet: address });
        }
      },
    }),
    defineRoute({
      id: 'user.wallets.link',
      method: 'post',
      path: '/api/user/wallets',
      fullAccess: true,
      summary: 'Link another wallet to your account with a signed Sign-In with Ethereum message.',
      tags: ['People'],
      accepts: ['person'],
      body: s.walletLinkBody,
      responses: { 201: { description: 'The wallet is linked to your account.', schema: r.walletLinkResponse } },
      example: s.walletLinkExample,
      handler: async ({ body, principal }) => {
        if (!principal?.personId) throw new ApiError('unauthorized', 'Sign in first.');
        // The session is fine; what failed is the wallet's proof: a 400 on the body, not a 401.
        const address = await d.wallets.verify(body.message, body.signature, (why) =>
          new ApiError('validation_error', `The wallet could not be linked: ${why}.`, {
            issues: [{ path: 'signature', reason: why }],
            hint: 'Ask for a new message at POST /api/auth/wallet/nonce for the wallet to link, sign it unchanged with that wallet, and send both.',
            example: s.walletLinkExample,
          }),
        );
        await d.people.linkWallet(principal.personId, address);
        return created({ address: address.toLowerCase(), linked: true });
      },
    }),
  ];
}
