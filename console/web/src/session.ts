// The signed-in user's session as GET /api/session answers it; null while signed out.
import type { Session } from "./types";

let current: Session | null = null;

export function getSession(): Session | null {
  return current;
}

export function setSession(session: Session | null): void {
  current = session;
}

// What the buttons may offer. The server refuses the same actions on its own.
export function canAct(): boolean {
  return !!current && current.can_act && !current.read_only;
}

export function canBulk(): boolean {
  return !!current && current.can_bulk && !current.read_only;
}

export function canAudit(): boolean {
  return !!current && current.can_audit;
}
