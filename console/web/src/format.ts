// How numbers, times and durations are shown. Numbers use en-US grouping ("1,234") whatever the
// browser's locale, so that pages read the same everywhere; times are local with the UTC offset.

const intFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const oneDecimal = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
const twoDecimals = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

const DASH = "—";

function isNum(n: unknown): n is number {
  return typeof n === "number" && Number.isFinite(n);
}

export function fmtInt(n: unknown): string {
  return isNum(n) ? intFormat.format(n) : DASH;
}

export function fmtNum(n: unknown, decimals: 1 | 2 = 1): string {
  if (!isNum(n)) return DASH;
  return (decimals === 1 ? oneDecimal : twoDecimals).format(n);
}

// 0.985 -> "98.5%"; null (no finished task) -> "—".
export function fmtRate(rate: unknown): string {
  return isNum(rate) ? `${oneDecimal.format(rate * 100)}%` : DASH;
}

// A run time in milliseconds: "12.3 ms", "1,234 ms".
export function fmtMs(ms: unknown): string {
  if (!isNum(ms)) return DASH;
  return `${ms >= 100 ? intFormat.format(ms) : oneDecimal.format(ms)} ms`;
}

// A span: "850 ms", "12 s", "4 min 3 s", "2 h 5 min", "3 d 4 h".
export function fmtDuration(ms: unknown): string {
  if (!isNum(ms)) return DASH;
  const neg = ms < 0;
  let v = Math.abs(ms);
  let out: string;
  if (v < 1000) out = `${Math.round(v)} ms`;
  else if ((v = Math.floor(v / 1000)) < 60) out = `${v} s`;
  else if (v < 3600) out = `${Math.floor(v / 60)} min ${v % 60} s`;
  else if (v < 86400) out = `${Math.floor(v / 3600)} h ${Math.floor((v % 3600) / 60)} min`;
  else out = `${Math.floor(v / 86400)} d ${Math.floor((v % 86400) / 3600)} h`;
  return neg ? `-${out}` : out;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

// Unix ms -> "2026-12-01 14:03:22 +01:00" in the browser's time zone.
export function fmtTime(ms: unknown): string {
  if (!isNum(ms) || ms <= 0) return DASH;
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return DASH;
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? "+" : "-";
  const abs = Math.abs(off);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ` +
    `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`
  );
}

// "12 s ago" relative to now_ms.
export function fmtAgo(ms: unknown, nowMs: number = Date.now()): string {
  if (!isNum(ms) || ms <= 0) return DASH;
  return `${fmtDuration(Math.max(0, nowMs - ms))} ago`;
}

const zoneFormats = new Map<string, Intl.DateTimeFormat | null>();

function zoneFormat(timeZone: string): Intl.DateTimeFormat | null {
  let f = zoneFormats.get(timeZone);
  if (f === undefined) {
    try {
      f = new Intl.DateTimeFormat("en-CA", {
        timeZone,
        year: "numeric",
        month: "2-digit",
        day: "2-digit",
        hour: "2-digit",
        minute: "2-digit",
        second: "2-digit",
        hourCycle: "h23",
        weekday: "short",
        timeZoneName: "shortOffset",
      } as Intl.DateTimeFormatOptions);
    } catch {
      f = null; // a zone this browser does not know
    }
    zoneFormats.set(timeZone, f);
  }
  return f;
}

// Unix seconds -> "Mon 2026-12-01 09:00:00 GMT+1 (Europe/Berlin)", read in the job's zone.
export function fmtInZone(unixSeconds: number, timeZone: string): string {
  if (!isNum(unixSeconds)) return DASH;
  const f = zoneFormat(timeZone || "UTC");
  if (!f) return `${new Date(unixSeconds * 1000).toISOString().replace("T", " ").replace(".000Z", "")} UTC`;
  const parts: Record<string, string> = {};
  for (const p of f.formatToParts(new Date(unixSeconds * 1000))) parts[p.type] = p.value;
  const hour = parts.hour === "24" ? "00" : parts.hour;
  return (
    `${parts.weekday} ${parts.year}-${parts.month}-${parts.day} ${hour}:${parts.minute}:${parts.second} ` +
    `${parts.timeZoneName ?? ""} (${timeZone || "UTC"})`
  );
}

// A <input type="datetime-local"> value (local time) -> Unix ms, or undefined when empty/invalid.
export function localInputToMs(value: string): number | undefined {
  if (!value) return undefined;
  const t = new Date(value).getTime();
  return Number.isNaN(t) ? undefined : t;
}

// Unix ms -> a value for <input type="datetime-local">.
export function msToLocalInput(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// Bytes of a string once UTF-8 encoded.
export function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}

export function fmtBytes(n: number): string {
  if (n < 1024) return `${intFormat.format(n)} B`;
  if (n < 1024 * 1024) return `${oneDecimal.format(n / 1024)} KiB`;
  return `${oneDecimal.format(n / (1024 * 1024))} MiB`;
}

// Baton workers' default consumer name: <service>:<host>:<pid>:<6 hex>:<language>.
export function parseConsumer(name: string): { language: string; host: string } | null {
  const parts = name.split(":");
  if (parts.length !== 5) return null;
  const [, host, pid, hex, language] = parts;
  if (!/^\d+$/.test(pid ?? "") || !/^[0-9a-f]{6}$/i.test(hex ?? "")) return null;
  if (!["cpp", "python", "node", "go", "java"].includes(language ?? "")) return null;
  return { language: language as string, host: host as string };
}
