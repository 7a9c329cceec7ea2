// Finds the exact text of a top-level member of a JSON object, so that a payload travels byte for
// byte as its producer wrote it (number spelling, escapes, whitespace) while the rest of the
// document is parsed normally. Call it only on text that is known to be valid JSON.

function skipWs(text: string, i: number): number {
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
    i++;
  }
  return i;
}

/** Index just past the string literal that starts at `i` (text[i] is '"'). */
function skipString(text: string, i: number): number {
  i++;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\') i += 2;
    else if (c === '"') return i + 1;
    else i++;
  }
  return i;
}

/** Index just past the JSON value that starts at `i`. */
function skipValue(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return skipString(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    while (i < text.length) {
      const d = text[i];
      if (d === '"') {
        i = skipString(text, i);
        continue;
      }
      if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return i;
  }
  // number, true, false, null: up to the next delimiter
  while (i < text.length && !',}] \t\r\n'.includes(text[i] as string)) i++;
  return i;
}

/**
 * The text of the value of top-level member `key` of the JSON object `text` (the last one when
 * the key repeats, as parsers keep the last), or undefined when absent or `text` is no object.
 */
export function findTopLevelMember(text: string, key: string): string | undefined {
  let i = skipWs(text, 0);
  if (text[i] !== '{') return undefined;
  i = skipWs(text, i + 1);
  let found: string | undefined;
  while (i < text.length && text[i] === '"') {
    const keyEnd = skipString(text, i);
    const name = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipWs(text, keyEnd);
    if (text[i] !== ':') return found;
    i = skipWs(text, i + 1);
    const start = i;
    i = skipValue(text, i);
    if (name === key) found = text.slice(start, i);
    i = skipWs(text, i);
    if (text[i] !== ',') break;
    i = skipWs(text, i + 1);
  }
  return found;
}
