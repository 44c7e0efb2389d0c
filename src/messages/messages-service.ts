import { ApiError } from '../platform/errors.js';
import { smtpMailer, type MailerOptions } from './smtp.js';
import { httpSms, type SmsProviderOptions } from './sms-http.js';
import { smsFailed } from './messages-contract.js';
import type { Messenger } from './messages-types.js';

export type { EmailMessage, Messenger, SmsMessage } from './messages-types.js';

/** Production mode: e-mail over SMTP, SMS through the HTTP provider. A provider that is not configured fails the send. */
export function productionMessenger(options: { smtp?: MailerOptions; sms?: SmsProviderOptions }): Messenger {
  const mailer = options.smtp ? smtpMailer(options.smtp) : undefined;
  const sms = options.sms ? httpSms(options.sms) : undefined;
  return {
    async sendEmail(m) {
      if (!mailer) throw new ApiError('service_unavailable', 'e-mail is not configured on this server (GPUPLANE_SMTP_URL)');
      await mailer.send(m);
    },
    async sendSms(m) {
      if (!sms) throw smsFailed();
      await sms.send(m);
    },
  };
}
