import { ApiError } from '../platform/errors.js';

/** Provider failures as the spec's 2FA table names them (the emulator's outbox messenger simulates them too). */
export const smsFailed = () => new ApiError('twilio_error', 'the SMS could not be delivered; check the number and try again');
export const smsProviderLimited = () =>
  new ApiError('twilio_rate_limited', 'the SMS provider is rate-limiting requests; wait a minute and retry', {}, undefined, { 'Retry-After': '60' });
