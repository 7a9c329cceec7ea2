// JSON checks and a pretty-printer that works on the text itself, so that numbers beyond 2^53
// and the order of keys are shown exactly as stored (JSON.parse + stringify would round them).

export function isJsonObjectText(text: string): { ok: true } | { ok: false; error: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `not valid JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    return { ok: false, error: "the payload must be a JSON object ({...})" };
  }
  return { ok: true };
}

export function isValidJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

// Re-indents valid JSON text with two spaces; the caller checks validity first.
export function reindentJson(text: string, indent = "  "): string {
  let out = "";
  let depth = 0;
  let inString = false;
  let escaped = false;
  const nl = () => "\n" + indent.repeat(depth);
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (inString) {
      out += c;
      if (escaped) escaped = false;
      else if (c === "\\") escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    switch (c) {
      case '"':
        inString = true;
        out += c;
        break;
      case "{":
      case "[": {
        // keep empty containers on one line
        let j = i + 1;
        while (j < text.length && " \t\r\n".includes(text.charAt(j))) j++;
        const close = c === "{" ? "}" : "]";
        if (text.charAt(j) === close) {
          out += c + close;
          i = j;
        } else {
          depth++;
          out += c + nl();
        }
        break;
      }
      case "}":
      case "]":
        depth--;
        out += nl() + c;
        break;
      case ",":
        out += "," + nl();
        break;
      case ":":
        out += ": ";
        break;
      case " ":
      case "\t":
      case "\r":
      case "\n":
        break;
      default:
        out += c;
    }
  }
  return out;
}
