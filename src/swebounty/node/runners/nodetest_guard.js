// swebounty's guard of the assertion machinery in node's own test runner (`node --test`):
// preloaded (`node --require`) in the runner and, through its execArgv, in the child process
// that runs each test file, before the file loads. In a child (NODE_TEST_CONTEXT says so) it
// records node's assert module and the realm's assertion machinery (assertions.js); when the
// child exits, anything replaced fails the file and is written to its stderr, which the runner
// hands the harness's reporter (node_test_reporter.mjs) as a `test:stderr` event.
// Plain CommonJS without newer syntax: it runs on the Node line of each task's era.
'use strict';
if (process.env.NODE_TEST_CONTEXT) {
  var fs = require('fs');
  var assertions = require('./assertions');
  var assert = require('assert');
  var watch = assertions.watch(global, { assert: assert, 'assert.strict': assert.strict || null });
  var writeSync = fs.writeSync;
  var on = process.on;
  on.call(process, 'exit', function () {
    var changed = watch.changed();
    if (!changed.length) return;
    process.exitCode = 1;
    try {
      writeSync(2, '\n' + assertions.TAMPERED + changed.join(', ') + '\n');
    } catch (err) { /* the file fails all the same */ }
  });
}
