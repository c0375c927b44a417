/**
 * One shared process for unit test files (what Node 22's --test-isolation=none does; Node 20
 * has no such flag). test/tiers/run.ts sends it a file at a time over IPC; the file is
 * imported inside a suite named after it, so its tests, hooks and TAP stay its own, and the
 * next file is imported only once this one's tests are done: files never run side by side in
 * here. Files that change the process for whoever runs next (umask, …) are listed in
 * test/tiers/tiers.ts to get a process of their own instead.
 */
import { after, describe } from 'node:test';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './tiers.js';

type Message = { file: string } | { end: true };

process.on('message', (m: Message) => {
  if ('end' in m) {
    process.disconnect();
    return;
  }
  const { file } = m;
  const done = () => process.send?.({ done: file });
  void describe(file, async () => {
    after(done);
    await import(pathToFileURL(path.join(ROOT, file)).href);
  });
});
process.send?.({ ready: true });
