// swebounty's result channel for the JavaScript runners: one signed message to the harness
// through the pipe it gave the run ($SWEBOUNTY_RESULT_FD), never a file the tested code could
// rewrite. The harness writes a fresh key on stdin; the key goes straight into an HMAC object
// (OpenSSL's memory, no JavaScript string holds it) and the buffer that held it is zeroed.
//
// `take()` hands the sender out once per process: the harness's own reporter takes it before
// any code of the workspace runs. A second `take()` (code of the workspace trying to sign its
// own results) writes bytes that are not a message to the channel: the harness then finds it
// tampered with, whatever else was sent. `watch()` records the reporting machinery by identity;
// what differs later was replaced by the code under test.
// Plain CommonJS without newer syntax: it runs on the Node line of each task's era.
'use strict';
var fs = require('fs');
var crypto = require('crypto');

var taken = false;
var state = null; // {fd, hmac}

function bytes(size) {
  return Buffer.alloc ? Buffer.alloc(size) : new Buffer(size); // eslint-disable-line
}

function open() {
  var text = process.env.SWEBOUNTY_RESULT_FD;
  delete process.env.SWEBOUNTY_RESULT_FD; // no child process learns where the channel is
  if (!text || !/^\d+$/.test(text)) return null;
  var fd = parseInt(text, 10);
  var key = bytes(256);
  var used = 0;
  for (;;) {
    var n = 0;
    try {
      n = fs.readSync(0, key, used, key.length - used, null);
    } catch (err) {
      if (err.code === 'EAGAIN') continue;
      break;
    }
    if (!n) break;
    used += n;
    if (used === key.length) break;
  }
  var end = used;
  while (end > 0 && key[end - 1] <= 32) end -= 1; // the trailing newline, as Python strips it
  var hmac = crypto.createHmac('sha256', key.slice(0, end));
  key.fill(0);
  return { fd: fd, hmac: hmac };
}

function poison() {
  if (!state) return;
  try {
    fs.writeSync(state.fd, '\nSWEBOUNTY-CHANNEL-TAKEN-TWICE\n');
  } catch (err) { /* the harness finds no message, or a tampered one */ }
}

exports.take = function take() {
  if (taken) {
    poison();
    return null;
  }
  taken = true;
  state = open();
  if (!state) return null;
  var sent = false;
  var own = state;
  return function send(payload) {
    if (sent) return;
    sent = true;
    var body = Buffer.from(JSON.stringify(payload), 'utf8');
    var mac = own.hmac.update(body).digest('hex');
    var data = Buffer.concat([Buffer.from('SWEBOUNTY-RESULT ' + mac + ' ' + body.length + '\n'), body]);
    var off = 0;
    while (off < data.length) {
      try {
        off += fs.writeSync(own.fd, data, off, data.length - off);
      } catch (err) {
        if (err.code === 'EAGAIN') continue;
        return; // the harness sees no result: a run that lost its results
      }
    }
  };
};

// name -> function of every function-valued own property of each watched object, now.
function describe(objects) {
  var found = {};
  Object.keys(objects).forEach(function (name) {
    var obj = objects[name];
    if (!obj) return;
    Object.getOwnPropertyNames(obj).forEach(function (prop) {
      var desc = Object.getOwnPropertyDescriptor(obj, prop);
      if (!desc) return;
      ['value', 'get', 'set'].forEach(function (part) {
        if (typeof desc[part] === 'function') found[name + '.' + prop + (part === 'value' ? '' : ':' + part)] = desc[part];
      });
    });
  });
  return found;
}

// A snapshot of `objects` (name -> object); its `changed()` lists what differs since.
exports.watch = function watch(objects) {
  var before = describe(objects);
  return {
    changed: function () {
      var now = describe(objects);
      var out = [];
      Object.keys(before).forEach(function (k) { if (now[k] !== before[k]) out.push(k); });
      Object.keys(now).forEach(function (k) { if (!(k in before)) out.push(k); });
      return out.slice(0, 20);
    }
  };
};

// node's assert module, that tests check with: a library that makes it accept anything is
// not a fix. (The process's own functions are not watched: libraries patch them for good
// reasons, signal-exit among them; an exit status the results contradict is caught anyway.)
exports.common = function common() {
  var assert = require('assert');
  return { assert: assert, 'assert.strict': assert.strict || null };
};
