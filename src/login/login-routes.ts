import { Type } from 'typebox';
import type { TypedApp } from '../platform/http.js';
import { principalOf, type Authenticator } from '../platform/auth.js';
import { badRequest } from '../platform/errors.js';
import type { SubaccountsService } from '../subaccounts/subaccounts-service.js';
import { SubaccountCreated } from '../subaccounts/subaccounts-schemas.js';
import { ErrorReply } from '../platform/schemas.js';
import type { TfaAuthenticator } from '../tfa/tfa-contract.js';
import { Bodies, Errors, Replies } from '../tfa/tfa-schemas.js';
import type { LoginService } from './login-service.js';
import {
  ChangePasswordBody, LoginBody, LoginOk, LoginReply, ResendVerificationBody, ResetPasswordBody, ResetRequestBody, SessionParams, SessionRevokeReply, SessionsReply, SessionTeamBody, SessionTeamReply, SessionTeamSetReply, SignUpBody, SignUpReply, VerifyEmailBody,
} from './login-schemas.js';
import type { FastifyRequest } from 'fastify';
import type { Sessions } from './sessions.js';

/** Whether the browser came over https: the socket's TLS, or X-Forwarded-Proto when GPUPLANE_TRUST_PROXY is on. */
const overHttps = (request: FastifyRequest) => request.protocol === 'https';

const tags = ['auth'];
const errors = { 400: ErrorReply, 401: ErrorReply, 403: ErrorReply, 409: ErrorReply, 429: ErrorReply, 503: ErrorReply };
const Ok = LoginOk;

/** Sign-up with e-mail verification, password login, logout (contract §3); subaccounts are made on the sign-up route. */
export async function loginRoutes(
  app: TypedApp,
  { login, auth, subaccounts, sessions }: { login: LoginService; auth: Authenticator; subaccounts: SubaccountsService; sessions: Sessions },
): Promise<void> {
  // A subaccount is made with the parent's key, which needs user_write (the category of this route at the real service).
  app.post('/api/v0/users/', {
    config: { category: 'public' },
    schema: {
      tags,
      summary: 'Sign up; a verification code is e-mailed to the address',
      description: 'With `parent_id: "me"` and an API key (user_write): a subaccount of that key\'s account '
        + '(`username`, `host_only` as `vastai create subaccount` sends them); its address is verified the same way.',
      body: SignUpBody,
      // The subaccount reply first: a sign-up's reply has no parent_id, so it falls through to SignUpReply.
      response: { 200: Type.Union([SubaccountCreated, SignUpReply]), ...errors },
    },
  }, async (request) => {
    const { parent_id: parent, username, host_only: hostOnly, ...signUp } = request.body;
    if (parent === undefined) {
      if (username !== undefined || hostOnly !== undefined) throw badRequest('body.username and body.host_only are for a subaccount: give parent_id "me" and your API key');
      return login.signUp(signUp);
    }
    await auth.require(request, 'user_write');
    return subaccounts.create(principalOf(request), { ...signUp, parent_id: parent, username, host_only: hostOnly });
  });

  app.post('/api/v0/users/verify-email/', {
    config: { category: 'public' },
    schema: {
      tags,
      summary: 'Verify the e-mail address with the code sent to it',
      body: VerifyEmailBody,
      response: { 200: Ok, ...errors },
    },
  }, async (request) => login.verifyEmail(request.body));

  app.post('/api/v0/users/verify-email/resend/', {
    config: { category: 'public' },
    schema: { tags, summary: 'E-mail a new verification code', body: ResendVerificationBody, response: { 200: Ok, ...errors } },
  }, async (request) => login.resendVerification(request.body));

  // Getting back into an account (issue 29 item 7): a reset by a code e-mailed to the address, and a change.
  app.post('/api/v0/users/reset-password/', {
    config: { category: 'public' },
    schema: {
      tags,
      summary: 'E-mail a password reset code to the address (the reply is the same whether it has an account or not)',
      body: ResetRequestBody,
      response: { 200: Ok, ...errors },
    },
  }, async (request) => login.requestPasswordReset(request.body));

  app.put('/api/v0/users/reset-password/', {
    config: { category: 'public' },
    schema: {
      tags,
      summary: 'Set a new password with the e-mailed reset code; every session of the account ends',
      body: ResetPasswordBody,
      response: { 200: Ok, ...errors },
    },
  }, async (request) => login.resetPassword(request.body));

  app.put('/api/v0/users/current/password/', {
    config: { category: 'user_write' },
    schema: {
      tags,
      summary: 'Change your password: the current one, and a second factor when 2FA is on; your other sessions end',
      body: ChangePasswordBody,
      response: { 200: Ok, ...errors },
    },
  }, async (request) => login.changePassword(principalOf(request), request.body, request.ip));

  app.post('/api/v0/auth/login/', {
    config: { category: 'public' },
    schema: {
      tags,
      summary: 'Log in with a password; with 2FA on, finish with POST /api/v0/tfa/',
      body: LoginBody,
      response: { 200: LoginReply, ...errors },
    },
  }, async (request, reply) => {
    const r = await login.login(request.body, request.ip);
    // Signed in (no second factor pending): the audit log records it for this user.
    if ('id' in r.body && typeof r.body.id === 'number') request.auditUserId = r.body.id;
    if (r.cookie) reply.header('set-cookie', r.cookie(overHttps(request)));
    return r.body;
  });

  app.post('/api/v0/auth/logout/', {
    config: { category: 'misc' },
    schema: { tags, summary: 'End the session that made the call', response: { 200: Ok, ...errors } },
  }, async (request, reply) => {
    const r = await login.logout(principalOf(request));
    reply.header('set-cookie', r.cookie(overHttps(request)));
    return { success: r.success, msg: r.msg };
  });

  // Sessions can be listed and revoked (issue 15), e.g. a browser left signed in elsewhere.
  app.get('/api/v0/auth/sessions/', {
    config: { category: 'user_read' },
    schema: { tags, summary: 'Your live login sessions (web console cookies and CLI session keys)', response: { 200: SessionsReply, ...errors } },
  }, async (request) => ({ success: true, sessions: await sessions.list(principalOf(request)) }));

  // The console's team switcher (issue 15 "switching into a team's context"): the session's team, as a team key's.
  // Whatever the team role grants (a role without `misc` must not trap a session in the team's context).
  app.get('/api/v0/auth/sessions/team/', {
    config: { category: 'misc', anySessionRole: true },
    schema: { tags, summary: 'The context this request acts in, and the teams your session may switch into', response: { 200: SessionTeamReply, ...errors } },
  }, async (request) => ({ success: true, ...(await sessions.team(principalOf(request))) }));

  app.put('/api/v0/auth/sessions/team/', {
    config: { category: 'misc', anySessionRole: true },
    schema: {
      tags,
      summary: 'Switch the calling login session into a team\'s context ({team_id}), or back to your own (null)',
      body: SessionTeamBody,
      response: { 200: SessionTeamSetReply, 404: ErrorReply, ...errors },
    },
  }, async (request) => sessions.setTeam(principalOf(request), request.body.team_id));

  app.delete('/api/v0/auth/sessions/:id/', {
    config: { category: 'user_write' },
    schema: {
      tags,
      summary: 'End one of your sessions; ending the one in use also clears its cookie',
      params: SessionParams,
      response: { 200: SessionRevokeReply, 404: ErrorReply, ...errors },
    },
  }, async (request, reply) => {
    const r = await sessions.revoke(principalOf(request), request.params.id);
    if (r.cookie) reply.header('set-cookie', r.cookie(overHttps(request)));
    return { success: r.success, msg: r.msg };
  });
}

/**
 * `POST /api/v0/tfa/`: the second step of a login with 2FA on. Login owns it (login depends on 2FA, never the other
 * way); routes.ts registers it just before the other 2FA routes. It authenticates by itself, with the login's
 * `tfa_secret` or a key.
 */
export async function tfaLoginRoutes(app: TypedApp, { login, tfaAuth }: { login: LoginService; tfaAuth: TfaAuthenticator }): Promise<void> {
  app.post('/api/v0/tfa/', {
    config: { category: 'user_write', customAuth: true },
    preValidation: tfaAuth.hook('user_write', true),
    schema: { tags: ['2fa'], summary: 'Complete a login with a second factor', body: Bodies.login, response: { 200: Replies.login, ...Errors } },
  }, async (request, reply) => {
    const r = await login.completeTfaLogin(tfaAuth.callerOf(request), request.body ?? {});
    if (r.cookie) reply.header('set-cookie', r.cookie(overHttps(request)));
    return r.body;
  });
}
