// swebounty's launcher for Jasmine: the project's own jasmine package, its own configuration,
// and one reporter more, which writes every spec's result to the file the harness names.
// Plain CommonJS without newer syntax: it runs on the Node line of each task's era.
'use strict';
var fs = require('fs');
var args = process.argv.slice(2);
var jasmineDir = args[0];
var out = args[1];
var config = args[2] || undefined;
var files = args.slice(3);
var Jasmine = require(jasmineDir);
var runner = new Jasmine({ projectBaseDir: process.cwd() });
var cases = [];
var errors = [];
var stack = [];

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
    if (status === 'failed') console.log('FAILED ' + r.fullName + '\n' + message + '\n');
  },
  jasmineDone: function (r) {
    ((r && r.failedExpectations) || []).forEach(function (e) { errors.push(messageOf([e])); });
    fs.writeFileSync(out, JSON.stringify({ cases: cases, errors: errors }));
    console.log(cases.length + ' specs, ' + errors.length + ' errors outside specs');
  }
};

Promise.resolve()
  .then(function () { return runner.loadConfigFile(config); })
  .then(function () {
    runner.addReporter(reporter);
    return runner.execute(files.length ? files : undefined);
  })
  .catch(function (err) {
    console.error((err && err.stack) || String(err));
    process.exit(1);
  });
