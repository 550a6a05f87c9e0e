// swebounty's reporter for node's built-in test runner (`node --test`): every test that ended,
// with the names of the tests and suites around it, sent signed through the harness's result
// channel when the run ends (channel.js). It runs in the runner's parent process, loaded before
// any test file runs (each test file runs in a child process of its own). A child whose tests'
// assertion machinery the code under test replaced says so on its stderr (nodetest_guard.js):
// sent as tampering.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const channel = require('./channel.js');
const { TAMPERED } = require('./assertions.js');
let send = channel.take();

export default async function* swebountyReporter(source) {
  const stacks = new Map(); // per file: the names of the tests started at each nesting level
  const cases = [];
  const tampered = [];
  for await (const event of source) {
    const data = event.data || {};
    const file = data.file || '';
    if (event.type === 'test:stderr') {
      const said = String(data.message || '');
      const at = said.indexOf(TAMPERED);
      if (at >= 0) tampered.push(`${said.slice(at, at + 1000).split('\n')[0]} (${file})`);
      continue;
    }
    if (event.type === 'test:start') {
      const stack = stacks.get(file) || [];
      stack.length = data.nesting;
      stack.push(data.name);
      stacks.set(file, stack);
      continue;
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const details = data.details || {};
    const error = details.error;
    if (error && error.failureType === 'subtestsFailed') continue; // its tests say which
    if (details.type === 'suite' && event.type === 'test:pass') continue;
    let status = event.type === 'test:pass' ? 'passed' : 'failed';
    if (data.skip !== undefined || data.todo !== undefined) status = 'skipped';
    if (details.type === 'suite' || (error && error.failureType === 'hookFailed')) status = 'error';
    const cause = error && (error.cause || error);
    const message = cause ? String((cause && (cause.stack || cause.message)) || cause) : '';
    const ancestors = (stacks.get(file) || []).slice(0, data.nesting).filter((n) => n !== file);
    cases.push({ file: file || null, ancestors, title: data.name, status,
                 message: message.slice(0, 4000) });
  }
  if (send) send({ cases, errors: [], tampered });
  send = null;
}
