// A task's payload: the raw stored text from /api/tasks/NS/ID/payload (exact bytes, so big numbers
// stay exact), with the payload inside the task JSON as the fallback.
import { getText, taskPath } from "./api";
import type { TaskBody } from "./types";

export const MAX_SHOWN_BYTES = 64 * 1024;

export function payloadUrl(ns: string, id: string): string {
  return `${taskPath(ns, id)}/payload`;
}

// The payload inside the task JSON as text: JSON values serialized, text (not JSON) as is.
export function bodyPayloadText(body: TaskBody | null | undefined): string | null {
  if (!body || body.payload === null || body.payload === undefined) return null;
  return typeof body.payload === "string" ? body.payload : JSON.stringify(body.payload);
}

export async function fetchRawPayload(ns: string, id: string): Promise<string> {
  return getText(payloadUrl(ns, id));
}
