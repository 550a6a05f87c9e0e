// swebounty's guard of the assertion machinery in Vitest's tests: the last of the setup files
// (the harness's reporter, vitest_reporter.mjs, adds it as Vitest starts), so it runs in each
// test file's worker after the project's own setup files and before the test file loads. It
// records the tests' assertion machinery (assertions.js: vitest's `expect` and its matcher
// registry, chai's Assertion and utilities that `expect` is made of, node's assert, the realm's
// intrinsics), checks it again as each test ends, and fails the file when anything was
// replaced, with a message the reporter sends as tampering.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { watch, TAMPERED } = require('./assertions.js');
const vitest = globalThis.__vitest_index__;

if (vitest && typeof vitest.afterAll === 'function') {
  const { expect, chai } = vitest;
  let assertion = null;
  try {
    assertion = Object.getPrototypeOf(expect(0));
  } catch (err) { /* an expect that needs a test: chai's own prototype is watched */ }
  const assert = require('assert');
  const realm = watch(globalThis, {
    'vitest.expect': expect,
    'expect(...)': assertion,
    'chai.Assertion.prototype': chai && chai.Assertion && chai.Assertion.prototype,
    'chai.util': chai && chai.util,
    'chai.assert': vitest.assert,
    assert,
    'assert.strict': assert.strict || null,
  });
  const changed = new Set();
  const check = () => {
    for (const name of realm.changed()) changed.add(name);
  };
  vitest.afterEach(check);
  vitest.afterAll(() => {
    check();
    if (changed.size) throw new Error(TAMPERED + [...changed].join(', '));
  });
}
