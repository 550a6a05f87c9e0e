// swebounty's guard of the assertion machinery in Jest's tests, preloaded (`node --require`)
// in Jest's process and, through its execArgv, in each of its workers. It wraps Jest's test
// framework adapter (jest-circus's; jest-jasmine2's before Jest 27), which every test file
// runs through: just before the test file loads (its environment, `expect` and the project's
// setup files are ready) it records the assertion machinery of the file's realm
// (assertions.js), and checks it again around each test's own function, as each test ends and
// when the file's tests have run.
// Anything replaced fails the whole file with a message that starts `assertions.TAMPERED`,
// which the harness's reporter (jest_reporter.js) sends as tampering.
// Plain CommonJS without newer syntax: it runs on the Node line of each task's era.
'use strict';
var Module = require('module');
var assertions = require('./assertions');

// Held from before any code of the workspace ran (which can reach this process's realm).
var then = Promise.prototype.then;
var resolved = Promise.resolve;
var apply = Reflect.apply;
var ADAPTER = /[\\/](jest-circus[\\/]build[\\/]legacy-code-todo-rewrite[\\/]jestAdapter|jest-jasmine2[\\/]build[\\/]index)\.js$/;
var CHECKPOINTS = { test_fn_start: true, test_fn_success: true, test_fn_failure: true, test_done: true };
var guarded = typeof WeakSet === 'function' ? new WeakSet() : null;

function guard(adapter) {
  if (typeof adapter !== 'function' || (guarded && guarded.has(adapter))) return adapter;
  var wrapped = function (globalConfig, config, environment, runtime, testPath) {
    var realm = environment && environment.global;
    var watch = null;
    var changed = {};
    var check = function () {
      if (watch) watch.changed().forEach(function (name) { changed[name] = true; });
    };
    ['requireModule', 'unstable_importModule'].forEach(function (name) {
      var original = runtime && runtime[name];
      if (typeof original !== 'function') return;
      runtime[name] = function (from, moduleName) {
        if (!watch && realm && from === testPath && moduleName === undefined) {
          watch = assertions.watch(realm);
        }
        return apply(original, this, arguments);
      };
    });
    if (environment) {
      // jest-circus tells the environment of every event: it looks as each test's own function
      // starts and ends (between the test's hooks, which may swap and restore) and at its end.
      var handle = environment.handleTestEvent;
      environment.handleTestEvent = function (event) {
        if (event && CHECKPOINTS[event.name]) check();
        return typeof handle === 'function' ? apply(handle, this, arguments) : undefined;
      };
    }
    var running = apply(resolved, Promise, [apply(adapter, this, arguments)]);
    return apply(then, running, [function (result) {
      check();
      var names = Object.keys(changed);
      if (names.length) throw new Error(assertions.TAMPERED + names.join(', '));
      return result;
    }]);
  };
  if (guarded) guarded.add(wrapped);
  return wrapped;
}

var load = Module._load;
Module._load = function (request, parent) {
  var exported = load.apply(this, arguments);
  if (typeof request !== 'string' || !/jestAdapter|jest-jasmine2/.test(request)) return exported;
  var file = '';
  try {
    file = Module._resolveFilename(request, parent);
  } catch (err) {
    return exported;
  }
  if (!ADAPTER.test(file) || !exported) return exported;
  if (typeof exported === 'function') {
    var wrapped = guard(exported);
    if (require.cache[file]) require.cache[file].exports = wrapped;
    return wrapped;
  }
  if (typeof exported.default === 'function') exported.default = guard(exported.default);
  return exported;
};
