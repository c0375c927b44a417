import { test } from 'node:test';
import assert from 'node:assert/strict';
import { consoleAddress } from '../../../src/api/console.js';
import { isBrigError } from '../../../src/util/errors.js';

test('the console address: loopback only, a free port by default, anything else refused with a hint', () => {
  assert.deepEqual(consoleAddress(undefined), { host: '127.0.0.1', port: 0 });
  assert.deepEqual(consoleAddress(''), { host: '127.0.0.1', port: 0 });
  assert.deepEqual(consoleAddress('127.0.0.1:8080'), { host: '127.0.0.1', port: 8080 });
  assert.deepEqual(consoleAddress(':9000'), { host: '127.0.0.1', port: 9000 });
  assert.deepEqual(consoleAddress('[::1]:0'), { host: '::1', port: 0 });
  assert.deepEqual(consoleAddress('localhost:1234'), { host: 'localhost', port: 1234 });
  for (const bad of ['0.0.0.0:80', '10.0.0.1:80', 'example.com:80', '[::]:80', '127.0.0.1:99999', 'a:b:c']) {
    assert.throws(() => consoleAddress(bad), (e: unknown) => isBrigError(e) && e.code === 'invalid_input', bad);
  }
});
