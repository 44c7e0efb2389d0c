import nodemailer from 'nodemailer';
import { ApiError } from '../platform/errors.js';
import type { EmailMessage } from './messages-types.js';

export interface MailerOptions {
  /** `smtp://user:pass@host:port` or `smtps://…` (config `smtpUrl`). */
  url: string;
  /** From address (config `smtpFrom`). */
  from: string;
  /** Seconds to wait for the server before giving up. @default 10 */
  timeoutS?: number;
}

/** E-mail over SMTP with nodemailer. Any failure is a 503 `service_unavailable`; the reason goes nowhere near the reply. */
export function smtpMailer({ url, from, timeoutS = 10 }: MailerOptions) {
  const ms = timeoutS * 1000;
  const transport = nodemailer.createTransport(url, { connectionTimeout: ms, greetingTimeout: ms, socketTimeout: ms } as any);
  return {
    async send(m: EmailMessage): Promise<void> {
      try {
        await transport.sendMail({ from, to: m.to, subject: m.subject, text: m.text });
      } catch {
        throw new ApiError('service_unavailable', 'the e-mail could not be sent; retry in a moment');
      }
    },
    close: () => transport.close(),
  };
}
