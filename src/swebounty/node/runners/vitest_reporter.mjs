// swebounty's reporter for Vitest (`--reporter`, beside the default one): it runs in Vitest's
// main process, loaded before any test runs (the tests run in workers), takes the result
// channel when it loads (channel.js), and sends every test file's results when the run ends,
// signed, in the shape of Jest's `--json` report. Only the first reporter built gets the
// channel: another spoils it. As Vitest starts it adds the harness's guard (vitest_guard.mjs)
// as the last setup file of every project: a test file whose assertion machinery the code
// under test replaced fails with the guard's message, sent as tampering.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const channel = require('./channel.js');
const { TAMPERED } = require('./assertions.js');
const GUARD = fileURLToPath(new URL('./vitest_guard.mjs', import.meta.url));
let send = channel.take();
let built = false;

const STATUS = { pass: 'passed', fail: 'failed', skip: 'pending', todo: 'pending' };

function messages(result) {
  return ((result && result.errors) || []).map((e) => String((e && (e.stack || e.message)) || e).slice(0, 4000));
}

function cases(tasks, ancestors, out) {
  for (const task of tasks || []) {
    if (task.type === 'suite') {
      cases(task.tasks, [...ancestors, task.name], out);
      if (task.result && task.result.state === 'fail' && messages(task.result).length) {
        // A hook of the suite that threw: its tests are not all good.
        out.push({ ancestorTitles: ancestors, title: task.name, status: 'failed',
                   failureMessages: messages(task.result) });
      }
      continue;
    }
    const state = task.result && task.result.state;
    const status = task.mode === 'skip' || task.mode === 'todo' ? 'pending' : (STATUS[state] || 'failed');
    out.push({ ancestorTitles: ancestors, title: task.name, status,
               failureMessages: status === 'failed' ? messages(task.result) : [] });
  }
  return out;
}

export default class SwebountyReporter {
  constructor() {
    this.send = null;
    if (built) channel.take(); // a second reporter: the channel is spoiled
    else this.send = send;
    built = true;
    send = null;
  }

  onInit(ctx) {
    for (const project of (ctx && ctx.projects) || [ctx]) {
      const config = project && project.config;
      if (config && Array.isArray(config.setupFiles)) config.setupFiles.push(GUARD);
      else if (config) config.setupFiles = [...(config.setupFiles ? [config.setupFiles] : []), GUARD];
    }
  }

  onFinished(files, errors) {
    const own = this.send;
    this.send = null;
    if (!own) return;
    const suites = (files || []).map((file) => {
      const failedToRun = file.result && file.result.state === 'fail' && !(file.tasks || []).length;
      const assertions = failedToRun ? [] : cases(file.tasks, [], []);
      const failing = failedToRun || assertions.some((a) => a.status === 'failed')
        || (file.result && file.result.state === 'fail');
      return { name: file.filepath || file.name, status: failing ? 'failed' : 'passed',
               message: messages(file.result).join('\n').slice(0, 4000), assertionResults: assertions };
    });
    const outside = (errors || []).map((e) => String((e && (e.stack || e.message)) || e).slice(0, 4000));
    if (outside.length) suites.push({ name: '', status: 'failed', message: outside.join('\n'), assertionResults: [] });
    const tampered = [];
    for (const file of files || []) {
      for (const said of messages(file.result)) {
        const at = said.indexOf(TAMPERED);
        if (at >= 0) tampered.push(`${said.slice(at, at + 1000).split('\n')[0]} (${file.filepath || file.name})`);
      }
    }
    own({ testResults: suites, tampered });
  }
}
