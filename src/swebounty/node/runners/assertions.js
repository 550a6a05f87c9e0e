// What of a test realm's assertion machinery the code under test must not replace, recorded by
// identity (the JavaScript side of pytest_guard/genuine.py's rule: the machinery known before
// any code of the workspace ran is the genuine one). A realm is the global object its tests
// run in: Jest's vm context, Jasmine's or Mocha's process. Recorded just before the test files
// load (after the runner, its `expect` and the project's setup files), compared when they ran:
// - the global `expect` and each of its members (expect.extend, expect.assertions, ...);
// - Jest's and Vitest's matcher registry (`expect.extend` writes there): a matcher that existed
//   replaced or removed (new ones are the tests' own custom matchers, and not flagged);
// - node's assert module, and the realm's intrinsics matchers decide with (Object.is, ...);
// - `extra` objects a runner names (Jasmine's matchers, Mocha's chai when the tests use it).
// A replaced member is listed by name; the runner's reporter sends the list as tampering.
// It reads properties through descriptors (no getter runs) with functions it holds from its
// load, before any code of the workspace ran: a replaced forEach or Object.keys cannot blind it.
// Plain CommonJS without newer syntax: it runs on the Node line of each task's era.
'use strict';

var MATCHERS = typeof Symbol === 'function' ? Symbol.for('$$jest-matchers-object') : null;
// Intrinsics the matchers' equality decides with that tests have no cause to spy on (a spy
// left on JSON.stringify or Array.prototype.includes by a test would read as tampering).
var INTRINSICS = {
  Object: ['is', 'keys', 'getOwnPropertyNames', 'getOwnPropertySymbols', 'getPrototypeOf'],
  'Object.prototype': ['hasOwnProperty'],
  Array: ['isArray'],
  'Function.prototype': ['call', 'apply', 'bind'],
  Reflect: ['ownKeys']
};
var getOwn = Object.getOwnPropertyDescriptor;
var ownNames = Object.getOwnPropertyNames;
var getProto = Object.getPrototypeOf;
var hasOwn = Object.prototype.hasOwnProperty;
var keysOf = Object.keys;
var call = Function.prototype.call;
var split = String.prototype.split;

function own(obj, name) {
  return call.call(hasOwn, obj, name);
}

exports.TAMPERED = 'swebounty: the assertion machinery of the tests was replaced: ';

// The descriptor of `name` on `obj` or the first prototype that has one (no getter runs).
function lookup(obj, name) {
  for (var o = obj, depth = 0; o && depth < 8; o = getProto(o), depth += 1) {
    var desc = getOwn(o, name);
    if (desc) return desc;
  }
  return null;
}

function slot(obj, name) {
  var desc = obj ? lookup(obj, name) : null;
  return desc ? (own(desc, 'value') ? desc.value : desc.get) : undefined;
}

// label -> value of every own member of `obj` (accessors by their functions).
function members(obj, label, out) {
  if (!obj || (typeof obj !== 'object' && typeof obj !== 'function')) return;
  var props = ownNames(obj);
  for (var i = 0; i < props.length; i += 1) {
    var desc = getOwn(obj, props[i]);
    if (!desc) continue;
    if (own(desc, 'value')) {
      if (typeof desc.value === 'function') out[label + '.' + props[i]] = desc.value;
    } else {
      out[label + '.' + props[i] + ':get'] = desc.get;
      out[label + '.' + props[i] + ':set'] = desc.set;
    }
  }
}

function describe(realm, extra) {
  var found = {};
  var expect = slot(realm, 'expect');
  found.expect = expect;
  members(expect, 'expect', found);
  var registry = MATCHERS ? slot(realm, MATCHERS) : null;
  if (registry && typeof registry === 'object') {
    found['matchers registry'] = slot(registry, 'matchers');
    members(found['matchers registry'], 'matcher', found);
  }
  var names = keysOf(INTRINSICS);
  for (var i = 0; i < names.length; i += 1) {
    var parts = call.call(split, names[i], '.');
    var obj = slot(realm, parts[0]);
    if (parts[1]) obj = slot(obj, parts[1]);
    var props = INTRINSICS[names[i]];
    for (var j = 0; j < props.length; j += 1) found[names[i] + '.' + props[j]] = slot(obj, props[j]);
  }
  var labels = keysOf(extra || {});
  for (var k = 0; k < labels.length; k += 1) members(extra[labels[k]], labels[k], found);
  return found;
}

// A record of `realm`'s assertion machinery now (plus `extra`: label -> object); its
// `changed()` names what was replaced or removed since.
exports.watch = function watch(realm, extra) {
  var before = describe(realm, extra);
  return {
    changed: function () {
      var now = describe(realm, extra);
      var out = [];
      var names = keysOf(before);
      for (var i = 0; i < names.length && out.length < 20; i += 1) {
        var k = names[i];
        if (before[k] !== undefined && now[k] !== before[k]) out[out.length] = k;
      }
      return out;
    }
  };
};
