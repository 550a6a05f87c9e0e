// swebounty's reporter for Jest (`--reporters`): it runs in Jest's parent process, built before
// any test runs (the tests run in workers or in vm contexts of their own), takes the result
// channel when it loads (channel.js), and sends every test file's results when the run
// completes, signed, in the shape of Jest's `--json` report. Only the first reporter built
// gets the channel: another (code of the workspace loading this file to report results of
// its own) gets nothing and spoils the channel. A test file whose assertion machinery the
// code under test replaced fails with a message of jest_guard.js's, sent as tampering.
// Plain CommonJS without newer syntax: it runs on the Node line of each task's era.
'use strict';
var channel = require('./channel');
var assertions = require('./assertions');

var send = channel.take();
var built = false;

function text(value) {
  return value === undefined || value === null ? '' : String(value);
}

function SwebountyReporter() {
  this._send = null;
  if (built) channel.take(); // a second reporter: the channel is spoiled
  else this._send = send;
  built = true;
  send = null;
}

SwebountyReporter.prototype.onRunComplete = function (contexts, results) {
  var own = this._send;
  this._send = null;
  if (!own) return;
  var tampered = [];
  var suites = ((results && results.testResults) || []).map(function (r) {
    var error = r.testExecError;
    var said = text(error && (error.message || error));
    var at = said.indexOf(assertions.TAMPERED);
    if (at >= 0) tampered.push(said.slice(at, at + 1000).split('\n')[0] + ' (' + text(r.testFilePath) + ')');
    var cases = (r.testResults || []).map(function (a) {
      return { ancestorTitles: (a.ancestorTitles || []).map(text), title: text(a.title),
               status: text(a.status),
               failureMessages: (a.failureMessages || []).map(function (m) { return text(m).slice(0, 4000); }) };
    });
    return { name: text(r.testFilePath),
             status: error || r.numFailingTests > 0 ? 'failed' : 'passed',
             message: text(error ? error.message || error : r.failureMessage).slice(0, 4000),
             assertionResults: error ? [] : cases };
  });
  own({ testResults: suites, tampered: tampered });
};

SwebountyReporter.prototype.getLastError = function () { return undefined; };

module.exports = SwebountyReporter;
