import type { Clock } from '../platform/clock.js';
import { ApiError } from '../platform/errors.js';
import type { OutboxStore } from '../emulator/outbox-store.js';
import type { FaultCounters } from './fault-counters.js';
import { smtpMailer, type MailerOptions } from './smtp.js';
import { httpSms, type SmsProviderOptions } from './sms-http.js';
import { smsFailed, smsProviderLimited } from './message-errors.js';

export interface EmailMessage {
  to: string;
  subject: string;
  text: string;
  /** The one-time code the message carries (the emulator's outbox shows it; never logged). */
  code: string | null;
}

export interface SmsMessage {
  to: string;
  text: string;
  code: string | null;
}

/**
 * The message providers every feature sends through. A failure is an ApiError with the spec's code:
 * SMS `twilio_error` / `twilio_rate_limited`, e-mail `service_unavailable`.
 */
export interface Messenger {
  sendEmail(m: EmailMessage): Promise<void>;
  sendSms(m: SmsMessage): Promise<void>;
}

/** Emulator fault names of contract §2 that act on SMS sends. */
export const SMS_FAULTS = { sms_error: 'sms_error', sms_rate_limited: 'sms_rate_limited' } as const;


/** Emulator mode: nothing leaves the machine; every message lands in the outbox (`GET /_emu/outbox`). */
export function outboxMessenger({ outbox, clock, faults }: { outbox: OutboxStore; clock: Clock; faults: FaultCounters }): Messenger {
  return {
    async sendEmail(m) {
      await outbox.insert({ channel: 'email', to: m.to, code: m.code, text: `${m.subject}\n\n${m.text}`, sent_at: clock.now() });
    },
    async sendSms(m) {
      // Injected faults fail the send exactly as a provider failure would, before anything is "sent".
      if (await faults.take(SMS_FAULTS.sms_rate_limited)) throw smsProviderLimited();
      if (await faults.take(SMS_FAULTS.sms_error)) throw smsFailed();
      await outbox.insert({ channel: 'sms', to: m.to, code: m.code, text: m.text, sent_at: clock.now() });
    },
  };
}

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
