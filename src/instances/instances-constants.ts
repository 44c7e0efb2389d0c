/**
 * Limits of an instance's creation body that clients apply before sending (the CLI gzip+base64-encodes a long onstart
 * itself): constants only, so a client imports them without the server's code.
 */

/** Spec Limits: `onstart` length; longer scripts arrive gzip-compressed then base64-encoded. */
export const ONSTART_MAX_CHARS = 4048;
/** A decoded (gzip+base64) onstart may be longer, but not unbounded: a zip bomb must not fill memory. */
export const ONSTART_DECODED_MAX_BYTES = 256 * 1024;
