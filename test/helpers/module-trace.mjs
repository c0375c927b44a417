// `node --import ./module-trace.mjs …` with BRIG_TEST_MODULE_TRACE=FILE: records every module
// the process resolves (built-ins as node:…), for tests that prove what a command does not load.
import { register } from 'node:module';

const file = process.env.BRIG_TEST_MODULE_TRACE;
if (file) register('./module-trace-hooks.mjs', import.meta.url, { data: { file } });
