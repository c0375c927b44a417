// `node --import ./module-trace.mjs …` with BRIG_TEST_MODULE_TRACE=FILE: records every module
// the process resolves (built-ins as node:…), for tests that prove what a command does not load:
// ES modules through the loader's hooks, CommonJS requires (a bundle's, a package's) by wrapping
// the CommonJS loader.
import fs from 'node:fs';
import Module, { builtinModules, register } from 'node:module';
import { pathToFileURL } from 'node:url';

const file = process.env.BRIG_TEST_MODULE_TRACE;
if (file) {
  register('./module-trace-hooks.mjs', import.meta.url, { data: { file } });
  const load = Module._load;
  Module._load = function traced(request, parent, isMain) {
    const bare = request.replace(/^node:/, '');
    let entry;
    if (builtinModules.includes(bare)) entry = `node:${bare}`;
    else {
      try {
        entry = pathToFileURL(Module._resolveFilename(request, parent, isMain)).href;
      } catch {
        entry = request;
      }
    }
    fs.appendFileSync(file, `${entry}\n`);
    return load.apply(this, [request, parent, isMain]);
  };
}
