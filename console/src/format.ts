/** How the console writes numbers, durations, sizes and times. */

/** `-` for null. */
export const num = (n: number | null | undefined): string => (n === null || n === undefined ? '-' : n.toLocaleString('en-US'));

/** `950 ms`, `42 s`, `5 min 12 s`, `3 h 04 min`, `2 d 03 h`; negative with a leading minus; `-` for null. */
export function duration(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 0) return `−${duration(-ms)}`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.floor(ms / 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${pad(s % 60)} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${pad(Math.floor(s / 60) % 60)} min`;
  return `${Math.floor(s / 86_400)} d ${pad(Math.floor(s / 3600) % 24)} h`;
}

/** `512 B`, `12.0 KiB`, ...; `-` for null or -1 (unlimited). */
export function bytes(n: number | null): string {
  if (n === null) return '-';
  if (n < 0) return `−${bytes(-n)}`;
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  for (; v >= 1024 && u < units.length - 1; u++) v /= 1024;
  return `${v.toFixed(1)} ${units[u]}`;
}

/** ISO time to the second, or `-`. */
export const time = (ms: number | null): string => (ms === null ? '-' : new Date(ms).toISOString().replace('T', ' ').slice(0, 19));
