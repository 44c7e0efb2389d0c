import type { FastifyReply } from 'fastify';
import type { TypedApp } from '../platform/http.js';
import type { Category } from '../platform/permissions.js';
import type { TfaAuthenticator } from './tfa-auth.js';
import type { TfaService } from './tfa-service.js';
import { durationText } from '../platform/clock.js';
import { TFA_AUTH_WINDOW_S } from './tfa-constants.js';
import { Bodies, Errors, Replies } from './tfa-schemas.js';

const tags = ['2fa'];

/** Marks a deprecated path and names its successor (RFC 8594 style headers). */
function deprecated(reply: FastifyReply, successor: string): void {
  reply.header('deprecation', 'true');
  reply.header('link', `<${successor}>; rel="successor-version"`);
}

/** The 2FA endpoints of the spec. Each authenticates itself (logged-out `secret`, Bearer, or session cookie). */
export async function tfaRoutes(app: TypedApp, { tfa, tfaAuth }: { tfa: TfaService; tfaAuth: TfaAuthenticator }): Promise<void> {
  const cfg = (category: Category, allowSecret: boolean) => ({
    config: { category, customAuth: true },
    preValidation: tfaAuth.hook(category, allowSecret),
  });
  const W = (allowSecret: boolean) => cfg('user_write', allowSecret);

  app.get('/api/v0/tfa/status/', {
    ...cfg('user_read', false),
    schema: { tags, summary: '2FA status and methods', response: { 200: Replies.status, ...Errors } },
  }, async (request) => tfa.status(tfaAuth.callerOf(request)));

  app.post('/api/v0/tfa/email/', {
    ...W(true),
    schema: { tags, summary: 'E-mail a verification code', body: Bodies.email, response: { 200: Replies.sent, ...Errors } },
  }, async (request) => tfa.email(tfaAuth.callerOf(request), request.body ?? {}));

  for (const [path, resend, successor] of [
    ['/api/v0/tfa/sms/', false, null],
    ['/api/v0/tfa/sms/resend/', true, null],
    ['/api/v0/tfa/test/', false, '/api/v0/tfa/sms/'],
    ['/api/v0/tfa/resend/', true, '/api/v0/tfa/sms/resend/'],
  ] as const) {
    app.post(path, {
      ...W(true),
      schema: {
        tags,
        summary: resend ? 'Send another SMS code for a challenge' : 'Send an SMS code',
        deprecated: successor !== null,
        body: Bodies.sms,
        response: { 200: Replies.sent, ...Errors },
      },
    }, async (request, reply) => {
      if (successor) deprecated(reply, successor);
      return tfa.sms(tfaAuth.callerOf(request), request.body ?? {}, resend);
    });
  }

  app.post('/api/v0/tfa/totp-setup/', {
    ...W(false),
    schema: { tags, summary: 'A new TOTP secret to confirm with confirm-new', response: { 200: Replies.totpSetup, ...Errors } },
  }, async (request) => tfa.totpSetup(tfaAuth.callerOf(request)));

  app.post('/api/v0/tfa/authorize-new-method/', {
    ...W(false),
    schema: { tags, summary: 'Start authorizing a new method (step 1)', body: Bodies.authorizeStart, response: { 200: Replies.authorizeStart, ...Errors } },
  }, async (request) => tfa.authorizeStart(tfaAuth.callerOf(request), request.body ?? {}));

  app.put('/api/v0/tfa/authorize-new-method/', {
    ...W(false),
    schema: { tags, summary: `Finish authorizing: opens the window to add a method, ${durationText(TFA_AUTH_WINDOW_S)} (step 2)`, body: Bodies.authorizeFinish, response: { 200: Replies.ok, ...Errors } },
  }, async (request) => tfa.authorizeFinish(tfaAuth.callerOf(request), request.body ?? {}));

  app.post('/api/v0/tfa/confirm-new/', {
    ...W(false),
    schema: { tags, summary: 'Add an SMS or TOTP method', body: Bodies.confirmNew, response: { 200: Replies.confirmNew, ...Errors } },
  }, async (request) => tfa.confirmNew(tfaAuth.callerOf(request), request.body ?? {}));

  app.post('/api/v0/tfa/test-submit/', {
    ...W(false),
    schema: { tags, summary: 'Add an SMS method (deprecated)', deprecated: true, body: Bodies.confirmNew, response: { 200: Replies.confirmNew, ...Errors } },
  }, async (request, reply) => {
    deprecated(reply, '/api/v0/tfa/confirm-new/');
    return tfa.confirmNew(tfaAuth.callerOf(request), { tfa_method: 'sms', ...request.body }, true);
  });

  app.delete('/api/v0/tfa/', {
    ...W(false),
    schema: { tags, summary: 'Remove a 2FA method', body: Bodies.remove, response: { 200: Replies.remove, ...Errors } },
  }, async (request) => tfa.remove(tfaAuth.callerOf(request), request.body ?? {}));

  app.put('/api/v0/tfa/update/', {
    ...W(false),
    schema: { tags, summary: 'Change the label or primary flag of a method', body: Bodies.update, response: { 200: Replies.update, ...Errors } },
  }, async (request) => tfa.update(tfaAuth.callerOf(request), request.body ?? {}));

  app.put('/api/v0/tfa/regen-backup-codes/', {
    ...W(false),
    schema: { tags, summary: 'Replace the backup codes with 10 new ones', body: Bodies.regen, response: { 200: Replies.regen, ...Errors } },
  }, async (request) => tfa.regenBackupCodes(tfaAuth.callerOf(request), request.body ?? {}));
}
