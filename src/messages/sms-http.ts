import type { SmsMessage } from './messages-types.js';
import { smsFailed, smsProviderLimited } from './messages-contract.js';

export interface SmsProviderOptions {
  /** Base URL of the provider (config `smsUrl`), e.g. `https://api.twilio.com/2010-04-01`. */
  baseUrl: string;
  /** Account id (config `smsAccount`): the Basic-auth user and a path segment. */
  account: string;
  /** Auth token (config `smsToken`): the Basic-auth password. */
  token: string;
  /** Sender shown to the recipient. @default 'gpuplane' */
  from?: string;
  /** @default 10 */
  timeoutS?: number;
}

/**
 * SMS through a Twilio-like REST API. The request:
 *
 *     POST {baseUrl}/Accounts/{account}/Messages.json
 *     Authorization: Basic base64(account:token)
 *     Content-Type: application/x-www-form-urlencoded
 *     To=<E.164>&From=<from>&Body=<text>
 *
 * A 2xx reply is delivered; 429 is `twilio_rate_limited`; anything else (other statuses, timeouts, refused
 * connections) is `twilio_error`. The provider's reply body is never echoed back.
 */
export function httpSms({ baseUrl, account, token, from = 'gpuplane', timeoutS = 10 }: SmsProviderOptions) {
  const url = `${baseUrl.replace(/\/+$/, '')}/Accounts/${encodeURIComponent(account)}/Messages.json`;
  const auth = `Basic ${Buffer.from(`${account}:${token}`).toString('base64')}`;
  return {
    async send(m: SmsMessage): Promise<void> {
      let status: number;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ To: m.to, From: from, Body: m.text }).toString(),
          signal: AbortSignal.timeout(timeoutS * 1000),
        });
        status = res.status;
        await res.body?.cancel();
      } catch {
        throw smsFailed();
      }
      if (status === 429) throw smsProviderLimited();
      if (status < 200 || status >= 300) throw smsFailed();
    },
  };
}
