import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OPERATOR_PROFILE, profileFor } from '../../../src/lease/index.js';

test('[INV-1] default profile: the one asked for, else the parent\'s (a worker\'s child stays a worker), else root for an operator spawn', () => {
  assert.equal(profileFor('researcher', 'worker'), 'researcher', 'asked for: attenuation still bounds it by the parent');
  assert.equal(profileFor(undefined, 'worker'), 'worker', 'saying nothing never widens a child to root');
  assert.equal(profileFor(undefined, undefined), OPERATOR_PROFILE);
  assert.equal(OPERATOR_PROFILE, 'root');
});
