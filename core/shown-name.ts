import { z } from 'zod';

// C1 controls, bidirectional marks, embeddings, overrides and isolates, zero-width spaces: hidden in a name and in a text.
const HIDDEN_BEYOND_C0 = '\\u007F-\\u009F\\u200B\\u200E\\u200F\\u202A-\\u202E\\u2060\\u2066-\\u2069\\uFEFF';

/**
 * Characters that show nothing or rearrange what follows: C0 and C1 controls, bidirectional marks, embeddings,
 * overrides and isolates, and zero-width spaces. A name shown to other people (a member's display name, a key's or an
 * agent's name in lists and usage records) holds none: they would hide it, disguise it as another, or drive a terminal.
 * Zero-width joiners stay: scripts and emoji sequences need them.
 */
const HIDDEN = new RegExp(`[\\u0000-\\u001F${HIDDEN_BEYOND_C0}]`);

export const HIDDEN_CHARACTERS_REASON = 'must not contain control, bidirectional-override or zero-width characters: they hide or disguise a name shown to others';

/** HIDDEN but for line breaks and tabs (\t, \n, \r), which a text of several lines (a description) holds. */
const HIDDEN_IN_TEXT = new RegExp(`[\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F${HIDDEN_BEYOND_C0}]`);

export const HIDDEN_IN_TEXT_REASON = 'must not contain control (but line breaks and tabs), bidirectional-override or zero-width characters: they hide or disguise text shown to others';

/** A text people see (a description on the marketplace): at most `max` characters, nothing in it hidden but line breaks and tabs. */
export function shownText(max: number) {
  return z.string().max(max).refine((s) => !HIDDEN_IN_TEXT.test(s), HIDDEN_IN_TEXT_REASON);
}

/** A name people see: trimmed, `min` to `max` characters, and nothing in it hidden (HIDDEN). */
export function shownName(min: number, max: number) {
  return z.string().trim().min(min).max(max).refine((s) => !HIDDEN.test(s), HIDDEN_CHARACTERS_REASON);
}
