import fs from 'node:fs';

/** `PATH[@REF]`: the last `@` splits, unless the whole text is an existing path (REF default HEAD). */
export function parseRepoSpec(spec: string): { path: string; ref: string } {
  const at = spec.lastIndexOf('@');
  if (at <= 0 || fs.existsSync(spec)) return { path: spec, ref: 'HEAD' };
  const ref = spec.slice(at + 1);
  return { path: spec.slice(0, at), ref: ref === '' ? 'HEAD' : ref };
}
