// swebounty's launcher for Jasmine: the project's own jasmine package, its own configuration,
// and one reporter more, which sends every spec's result, signed, through the harness's result
// channel (channel.js: taken here, before anything of the workspace runs), with what of the
// assertion machinery the specs check with was replaced while they ran (assertions.js: the
// global `expect`, Jasmine's matchers and expectations, node's assert).
// Plain CommonJS without newer syntax: it runs on the Node line of each task's era.
'use strict';
var channel = require('./channel');
var assertions = require('./assertions');
var send = channel.take();
var watch = channel.watch(channel.common());
var args = process.argv.slice(2);
var jasmineDir = args[0];
var config = args[1] || undefined;
var files = args.slice(2);
var Jasmine = require(jasmineDir);
var runner = new Jasmine({ projectBaseDir: process.cwd() });
var cases = [];
var errors = [];
var stack = [];
var changed = {};
var realm = null;

function made(factory) {
  try {
    return typeof factory === 'function' ? Object.getPrototypeOf(factory({})) : null;
  } catch (err) {
    return null;
  }
}

function check() {
  if (realm) realm.changed().forEach(function (name) { changed[name] = true; });
}

// Jasmine's own matchers and what runs them (its `jasmine` object: `j$` in jasmine-core).
function machinery(j$) {
  var found = {};
  if (!j$) return found;
  found['jasmine.matchers'] = j$.matchers;
  found['jasmine.asyncMatchers'] = j$.asyncMatchers;
  // Jasmine 3+ hides the expectations' classes behind factories: one made here shows them.
  var E = j$.Expectation || {};
  found['jasmine.Expectation.prototype'] = made(E.factory) || E.prototype;
  found['jasmine.AsyncExpectation.prototype'] = made(E.asyncFactory);
  if (j$.MatchersUtil) found['jasmine.MatchersUtil.prototype'] = j$.MatchersUtil.prototype;
  found['jasmine.matchersUtil'] = j$.matchersUtil; // before jasmine 3.6: what matchers compare with
  return found;
}

function messageOf(expectations) {
  return (expectations || []).map(function (e) {
    return (e.message || '') + (e.stack ? '\n' + e.stack : '');
  }).join('\n').slice(0, 4000);
}

var reporter = {
  suiteStarted: function (r) { stack.push(r.description); },
  suiteDone: function (r) {
    stack.pop();
    if (r.failedExpectations && r.failedExpectations.length) {
      // An afterAll or a describe body that threw: the suite's tests are not all good.
      cases.push({ file: r.filename || null, ancestors: stack.slice(), title: r.description,
                   status: 'error', message: messageOf(r.failedExpectations) });
    }
  },
  specDone: function (r) {
    var status = r.status === 'passed' ? 'passed' : (r.status === 'failed' ? 'failed' : 'skipped');
    var message = messageOf(r.failedExpectations);
    cases.push({ file: r.filename || null, ancestors: stack.slice(), title: r.description,
                 status: status, message: message });
    check();
    if (status === 'failed') console.log('FAILED ' + r.fullName + '\n' + message + '\n');
  },
  jasmineDone: function (r) {
    ((r && r.failedExpectations) || []).forEach(function (e) { errors.push(messageOf([e])); });
    check();
    var tampered = watch.changed().concat(Object.keys(changed)).map(function (n) { return n + ' was replaced'; });
    if (send) send({ cases: cases, errors: errors, tampered: tampered });
    send = null;
    console.log(cases.length + ' specs, ' + errors.length + ' errors outside specs');
  }
};

Promise.resolve()
  .then(function () { return runner.loadConfigFile(config); })
  .then(function () {
    runner.addReporter(reporter);
    // The machinery as the runner and its configuration left it, before any spec file loads.
    realm = assertions.watch(global, machinery(runner.jasmine));
    return runner.execute(files.length ? files : undefined);
  })
  .catch(function (err) {
    console.error((err && err.stack) || String(err));
    process.exit(1);
  });
