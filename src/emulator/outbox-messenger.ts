import type { Clock } from '../platform/clock.js';
import { smsFailed, smsProviderLimited } from '../messages/messages-contract.js';
import type { Messenger } from '../messages/messages-types.js';
import type { FaultCounters } from './fault-counters-store.js';
import type { OutboxStore } from './outbox-store.js';

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
