// @vitest-environment jsdom
/**
 * The chat list's filter as a message search: the word being typed matches as a prefix (WhatsApp Web's behaviour),
 * while quotes, operators and finished prefixes are sent as typed. The Chromium e2e (console-operator) types a
 * prefix and finds the whole word through the real API.
 */
import { describe, expect, it } from 'vitest';
import { typedQuery } from '../../renderer/src/views/ChatsView.tsx';

describe('typedQuery', () => {
  it('makes the last word a prefix while it is typed, in any script', () => {
    expect(typedQuery('lightho')).toBe('lightho*');
    expect(typedQuery('  meet lightho ')).toBe('meet lightho*');
    expect(typedQuery('São Pau')).toBe('São Pau*');
    expect(typedQuery('東京')).toBe('東京*');
    expect(typedQuery('-spam')).toBe('-spam*');
  });

  it('sends quotes, operators and open phrases as typed', () => {
    expect(typedQuery('"at dawn"')).toBe('"at dawn"');
    expect(typedQuery('"lighthouse')).toBe('"lighthouse'); // an open phrase: the API answers 400, no section shown
    expect(typedQuery('light*')).toBe('light*');
    expect(typedQuery('meet -')).toBe('meet -');
    expect(typedQuery('')).toBe('');
  });
});
