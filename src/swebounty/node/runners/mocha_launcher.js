// swebounty's launcher for Mocha: the project's own mocha, its own command line and
// configuration, and the harness's reporting beside its spec reporter. Before anything of the
// workspace runs, it takes the result channel (channel.js), records Mocha's reporting machinery
// by identity, and hooks the runner's `run` so that it hears every test's end of the run the
// command line starts (its Mocha is the first one built; a run of another is reported). As the
// process exits after that run ended, it sends every test's result, and what of the machinery
// was replaced meanwhile, signed, through the channel; so is what of the assertion machinery
// the tests check with was replaced (assertions.js; chai's too, recorded as it first loads,
// and again after each plugin of the environment's packages that `chai.use` applies).
// Arguments: mocha's package directory, its CLI entry, then mocha's own.
// Plain CommonJS without newer syntax: it runs on the Node line of each task's era.
'use strict';
var fs = require('fs');
var Module = require('module');
var path = require('path');
var channel = require('./channel');
var assertions = require('./assertions');

var send = channel.take();
var args = process.argv.slice(2);
var mochaDir = args[0];
var entry = args[1];
var Mocha = require(mochaDir);
var Runner = require(path.join(mochaDir, 'lib', 'runner'));
var runners = { Runner: Runner };
var machinery = {};
['suite', 'test', 'runnable', 'hook'].forEach(function (name) {
  try {
    machinery[name] = require(path.join(mochaDir, 'lib', name));
  } catch (err) { /* not in this version */ }
});
try {
  runners.ParallelBufferedRunner = require(path.join(mochaDir, 'lib', 'nodejs', 'parallel-buffered-runner'));
} catch (err) { /* mocha before 8 runs in one process only */ }

var cases = [];
var problems = [];
var attached = null;
var ended = false;
var cli = null; // the Mocha the command line built: the first one (its constructor sets its ui)
var starting = false; // inside cli.run(): the runner it starts is the one to hear
var changed = {};
var watch = null;
var realm = assertions.watch(global);
var chaiWatch = null;
// The environment's packages (read-only in the sandbox), and what their files exported as they
// loaded: a chai plugin among them may change chai's assertions; the workspace's code may not.
var packages = fs.realpathSync(path.dirname(mochaDir)) + path.sep;
var packaged = typeof WeakSet === 'function' ? new WeakSet() : null;
var CHAI = /[\\/]node_modules[\\/]chai[\\/](index|lib[\\/]chai)\.js$/;

function messageOf(err) {
  if (!err) return '';
  return String((err.message || err) + (err.stack ? '\n' + err.stack : '')).slice(0, 4000);
}

function parentTitle(runnable) {
  var parent = runnable.parent;
  var title = parent && typeof parent.fullTitle === 'function' ? parent.fullTitle() : '';
  return title ? [title] : [];
}

function fileOf(runnable) {
  var r = runnable;
  while (r && !r.file) r = r.parent;
  return (r && r.file) || null;
}

function record(runnable, status, err) {
  cases.push({ file: fileOf(runnable), ancestors: parentTitle(runnable),
               title: String(runnable.title), status: status, message: messageOf(err) });
}

function check() {
  [watch, realm, chaiWatch].forEach(function (w) {
    if (w) w.changed().forEach(function (name) { changed[name] = true; });
  });
}

function chaiMachinery(chai) {
  return { chai: chai, 'chai.Assertion.prototype': chai.Assertion && chai.Assertion.prototype,
           'chai.assert': chai.assert, 'chai.util': chai.util };
}

function adoptChai(chai) {
  var use = chai.use;
  if (typeof use === 'function') {
    chai.use = function (plugin) {
      if (!packaged || !packaged.has(plugin)) return use.apply(this, arguments);
      check();
      var result = use.apply(this, arguments);
      chaiWatch = assertions.watch(null, chaiMachinery(chai)); // the plugin's is genuine
      return result;
    };
  }
  chaiWatch = assertions.watch(null, chaiMachinery(chai));
}

var load = Module._load;
Module._load = function (request, parent, isMain) {
  var exported = load.apply(this, arguments);
  if (!packaged || typeof request !== 'string' || /^[./]/.test(request)) return exported;
  if (!exported || (typeof exported !== 'object' && typeof exported !== 'function')) return exported;
  var file = '';
  try {
    file = Module._resolveFilename(request, parent, isMain);
  } catch (err) {
    return exported;
  }
  if (file.indexOf(packages) !== 0) return exported;
  packaged.add(exported);
  if (typeof exported.default === 'function') packaged.add(exported.default);
  if (!chaiWatch && CHAI.test(file) && exported.Assertion) adoptChai(exported);
  return exported;
};

function attach(runner) {
  runner.on('pass', function (test) { record(test, 'passed'); });
  runner.on('pending', function (test) { record(test, 'skipped'); });
  runner.on('fail', function (test, err) {
    // A hook that failed is named as mocha names it: '"before all" hook for "x"'.
    record(test, test.type === 'hook' ? 'error' : 'failed', err);
  });
  runner.on('test end', check);
  runner.on('end', function () {
    check();
    ended = true;
  });
}

// Sent as the process exits, so that whatever happened after the run (another run) is said.
process.on('exit', function () {
  if (!ended || !send) return; // no results: the harness finds none
  check();
  var tampered = Object.keys(changed).map(function (n) { return n + ' was replaced'; });
  send({ cases: cases, errors: [], tampered: tampered.concat(problems) });
  send = null;
});

var ui = Mocha.prototype.ui;
Mocha.prototype.ui = function () {
  if (!cli) cli = this;
  return ui.apply(this, arguments);
};
var mochaRun = Mocha.prototype.run;
Mocha.prototype.run = function () {
  starting = this === cli || !cli;
  try {
    return mochaRun.apply(this, arguments);
  } finally {
    starting = false;
  }
};

Object.keys(runners).forEach(function (name) {
  var R = runners[name];
  if (!R || !R.prototype || !Object.prototype.hasOwnProperty.call(R.prototype, 'run')) return;
  var run = R.prototype.run;
  R.prototype.run = function () {
    if (!attached && starting) {
      attached = this;
      attach(this);
    } else if (attached !== this) {
      problems.push('a mocha run the command line did not start');
    }
    return run.apply(this, arguments);
  };
});

var watched = channel.common();
watched['Mocha.prototype'] = Mocha.prototype;
Object.keys(runners).forEach(function (name) {
  if (runners[name] && runners[name].prototype) watched[name + '.prototype'] = runners[name].prototype;
});
Object.keys(machinery).forEach(function (name) {
  if (machinery[name] && machinery[name].prototype) watched[name + '.prototype'] = machinery[name].prototype;
});
watch = channel.watch(watched);

process.argv = [process.argv[0], entry].concat(args.slice(2));
require(entry);
