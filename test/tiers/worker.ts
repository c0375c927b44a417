/**
 * A test process started before it is needed (test/tiers/run.ts), in one of two modes:
 *
 * - shared (`worker.ts`): unit test files, one at a time over IPC — what Node 22's
 *   --test-isolation=none does (Node 20 has no such flag). Each file is imported inside a
 *   suite named after it, so its tests, hooks and TAP stay its own, and the next file is
 *   imported only once this one's tests are done: files never run side by side in here.
 *   Files that change the process for whoever runs next get a process of their own instead
 *   (test/tiers/tiers.ts).
 * - single (`worker.ts --single [--preload MODULE]…`): exactly one file, as if run alone with
 *   `node --import tsx FILE`: its tests at the top level, the process ends with them. It is
 *   started while other files still run and loads tsx and the file's own imports (MODULE: an
 *   absolute path or a package) first, in the file's order, so a file's start-up overlaps
 *   another's run instead of adding to the tier's wall time.
 */
import { after, describe } from 'node:test';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './tiers.js';

type Message = { file: string } | { end: true };

const url = (file: string) => pathToFileURL(path.join(ROOT, file)).href;

const args = process.argv.slice(2);
if (args[0] === '--single') {
  const assigned = new Promise<Message>((resolve) => process.once('message', resolve));
  for (let i = 1; i < args.length; i++) if (args[i] === '--preload') await import(args[++i]!.startsWith('/') ? pathToFileURL(args[i]!).href : args[i]!);
  process.send?.({ ready: true });
  const m = await assigned;
  // Let go of the runner first: from here on this is a plain test process that ends when its tests do.
  process.disconnect();
  if ('file' in m) await import(url(m.file));
} else {
  process.on('message', (m: Message) => {
    if ('end' in m) return void process.disconnect();
    const { file } = m;
    void describe(file, async () => {
      after(() => process.send?.({ done: file }));
      await import(url(file));
    });
  });
  process.send?.({ ready: true });
}
