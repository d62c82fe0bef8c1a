/**
 * Sandbox phone-number handling: parsing what the admin API accepts (`+15550100`, `15550100`,
 * `+1 555 0100`, `+1-555-0100`) into bare E.164 digits, and formatting digits back to `+<digits>`.
 * Internally every account is keyed by its digits ("pn", E.164 without '+'). And the JIDs an account is addressed
 * by: its phone-number JID, its LID JID, and the one of the two a group's addressing mode uses.
 */
import type { AccountRow, AddressingMode } from './store.ts';

const E164_DIGITS = /^[1-9]\d{4,14}$/;

/**
 * Parse a user-supplied phone number into E.164 digits without '+'.
 * Accepts an optional leading '+', and spaces, dashes, dots and parentheses as separators.
 * @returns the digits, or `undefined` when the input is not a plausible E.164 number (5–15 digits).
 */
export function parsePhoneNumber(input: unknown): string | undefined {
  if (typeof input !== 'string') return undefined;
  const compact = input.trim().replace(/[\s\-.()]/g, '');
  const digits = compact.startsWith('+') ? compact.slice(1) : compact;
  return E164_DIGITS.test(digits) ? digits : undefined;
}

/** Format E.164 digits as `+<digits>` (the admin API's response form). */
export function formatPhoneNumber(pn: string): string {
  return `+${pn}`;
}

/** `<pn>@s.whatsapp.net`, the account's phone-number JID (no device). */
export function pnJid(pn: string, device?: number): string {
  return device ? `${pn}:${device}@s.whatsapp.net` : `${pn}@s.whatsapp.net`;
}

/** `<lid>@lid`, the account's LID JID (no device) from its LID user digits. */
export function lidJid(lidUser: string, device?: number): string {
  return device ? `${lidUser}:${device}@lid` : `${lidUser}@lid`;
}

/** A group member's JID in the group's addressing mode (device 0 unless given). */
export function memberJid(mode: AddressingMode, account: Pick<AccountRow, 'pn' | 'lid'>, device?: number): string {
  return mode === 'lid' ? lidJid(account.lid, device) : pnJid(account.pn, device);
}
