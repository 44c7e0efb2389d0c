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
