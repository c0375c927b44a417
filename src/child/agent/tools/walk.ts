/**
 * A bounded walk of a directory tree for list_files and grep_files. Symlinks are listed,
 * never followed (a link could lead out of the roots; the confinement check is per path).
 */
import fs from 'node:fs';
import path from 'node:path';

export interface Entry {
  path: string;
  /** Relative to the walk's start, `/`-separated. */
  rel: string;
  depth: number;
  type: 'file' | 'dir' | 'link' | 'other';
  size: number;
}

export interface WalkOptions {
  maxDepth: number;
  maxEntries: number;
  /** Relative paths (from the start) not to enter or list. */
  skip?: (rel: string, name: string) => boolean;
}

/** Entries in name order, depth first; `truncated` when maxEntries cut the walk. */
export function walk(start: string, o: WalkOptions): { entries: Entry[]; truncated: boolean } {
  const entries: Entry[] = [];
  let truncated = false;
  const visit = (dir: string, relDir: string, depth: number): void => {
    let names: string[];
    try {
      names = fs.readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (entries.length >= o.maxEntries) {
        truncated = true;
        return;
      }
      const rel = relDir ? `${relDir}/${name}` : name;
      if (o.skip?.(rel, name)) continue;
      const p = path.join(dir, name);
      let st: fs.Stats;
      try {
        st = fs.lstatSync(p);
      } catch {
        continue;
      }
      const type = st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
      entries.push({ path: p, rel, depth, type, size: st.size });
      if (type === 'dir' && depth < o.maxDepth) visit(p, rel, depth + 1);
    }
  };
  visit(start, '', 1);
  return { entries, truncated };
}
