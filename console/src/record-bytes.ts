/**
 * How the record browser shows bytes (a key, a value, a header value) that came as base64: JSON pretty-printed, UTF-8
 * text as it is, anything else as hex. A value the broker cut may end inside a character: that tail is left out.
 */

/** Bytes as shown: the kind picked and the text to show. */
export interface ShownBytes {
  kind: 'json' | 'text' | 'hex' | 'null';
  text: string;
}

/** Control characters other than tab, line feed and carriage return: their presence makes bytes binary. */
// eslint-disable-next-line no-control-regex
const BINARY = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/;

/** Bytes of a base64 string. */
export function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** `ff 00 1a ...`, 16 bytes a line. */
function hex(bytes: Uint8Array): string {
  const lines: string[] = [];
  for (let i = 0; i < bytes.length; i += 16) lines.push(Array.from(bytes.subarray(i, i + 16), (b) => b.toString(16).padStart(2, '0')).join(' '));
  return lines.join('\n');
}

/**
 * Base64 bytes (or null) as shown. `cut`: the bytes are the start of longer ones, so a character split at the end is
 * dropped rather than making the whole binary.
 */
export function showBytes(base64: string | null, cut = false): ShownBytes {
  if (base64 === null) return { kind: 'null', text: 'null' };
  const bytes = fromBase64(base64);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: cut });
  } catch {
    return { kind: 'hex', text: hex(bytes) };
  }
  if (BINARY.test(text)) return { kind: 'hex', text: hex(bytes) };
  if (!cut && /^\s*[[{]/.test(text)) {
    try {
      return { kind: 'json', text: JSON.stringify(JSON.parse(text), null, 2) };
    } catch {
      // not JSON after all: text
    }
  }
  return { kind: 'text', text };
}
