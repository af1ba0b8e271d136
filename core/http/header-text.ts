/**
 * A header value as the text its sender meant. Node hands header bytes over one character per byte
 * (latin-1), so a UTF-8 User-Agent such as "café-agent/1.0" would read "cafÃ©-agent/1.0": bytes
 * that form valid UTF-8 are decoded as such, anything else is kept as it came.
 */
export function headerText(value: string | undefined): string | undefined {
  if (value === undefined || !/[\u0080-\u00ff]/.test(value) || /[\u0100-\uffff]/.test(value)) return value;
  const bytes = Buffer.from(value, 'latin1');
  const decoded = bytes.toString('utf8');
  // A round trip that does not give back the same bytes was not UTF-8 (a lone byte became U+FFFD).
  return Buffer.from(decoded, 'utf8').equals(bytes) ? decoded : value;
}

/** The request's User-Agent, decoded as headerText() does. */
export function userAgentOf(req: { headers: { 'user-agent'?: string | undefined } }): string | undefined {
  return headerText(req.headers['user-agent']);
}
