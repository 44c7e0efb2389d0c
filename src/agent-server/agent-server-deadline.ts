/** A real-time deadline for holding a connection (not service time: a virtual clock does not move by itself). */
export function deadline(ms: number): { passed: () => boolean; left: () => number; cancel: () => void } {
  const end = performance.now() + ms;
  let passed = false;
  const t = setTimeout(() => (passed = true), ms);
  return { passed: () => passed, left: () => Math.max(0, end - performance.now()), cancel: () => clearTimeout(t) };
}
