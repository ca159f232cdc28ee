// End-to-end test of examples/e2b_agent_loop.mjs, the agent loop of docs/agents.md written for
// E2B's code interpreter SDK, against a running Callisto: a scripted stand-in for the model
// writes buggy code, must find the traceback in the tool result, writes the fix (which relies
// on the state the failed call left) and a chart, and answers; every step checks what the model
// was shown. Then the example as a program (a copy beside the npm packages of these tests, as
// `npm install` in examples/ would give it): the offline demo, and its refusals without a token
// or a model key. The sandbox is killed at the end of each loop, even when the model fails.
//
//   CALLISTO_URL=http://127.0.0.1:P CALLISTO_TOKEN=T node e2b_example_test.mjs [name-substring]

import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BASE_URL, TOKEN, check, runTests, test } from './runner.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const examplePath = join(here, '..', '..', '..', 'examples', 'e2b_agent_loop.mjs');

process.env.E2B_API_URL = BASE_URL;
process.env.E2B_SANDBOX_URL = BASE_URL;
process.env.E2B_API_KEY = TOKEN;

const { Sandbox } = await import('@e2b/code-interpreter');
const example = await import(examplePath);

// The tool_result the loop sent back for callId: its text, images and is_error.
function toolResult(messages, callId) {
  const last = messages[messages.length - 1];
  check(last.role === 'user' && Array.isArray(last.content), 'a tool result turn', last);
  const results = last.content.filter(b => b.tool_use_id === callId);
  check(results.length === 1 && results[0].type === 'tool_result', `one tool_result for ${callId}`, last.content);
  const { content } = results[0];
  return {
    text: content.filter(b => b.type === 'text').map(b => b.text).join('\n'),
    images: content.filter(b => b.type === 'image'),
    failed: results[0].is_error,
  };
}

const toolUse = (id, input) => ({ role: 'assistant', content: [{ type: 'tool_use', id, name: 'run_code', input }] });

// Sandboxes the caller has: the loop's must be gone after it.
async function sandboxIds() {
  const page = await Sandbox.list().nextItems();
  return new Set(page.map(s => s.sandboxId));
}

test('the loop: a traceback the model sees and fixes, state kept, a chart, the sandbox killed', async () => {
  const before = await sandboxIds();
  let seenSandbox = null;
  const steps = [
    () => toolUse('c1', example.DEMO_SCRIPT[0]),
    async messages => {
      const r = toolResult(messages, 'c1');
      check(!r.failed && r.text.includes('6 sales.csv'), 'bash wrote the CSV', r);
      const now = [...(await sandboxIds())].filter(id => !before.has(id));
      check(now.length === 1, 'the loop runs in one sandbox of its own', now);
      seenSandbox = now[0];
      return toolUse('c2', example.DEMO_SCRIPT[1]);
    },
    messages => {
      const r = toolResult(messages, 'c2');
      check(r.failed, 'the failing call is marked as an error', r);
      check(r.text.includes('KeyError') && r.text.includes("['revenu']") && r.text.includes('Traceback'),
        'the model is shown the full traceback, with the failing line', r.text);
      return toolUse('c3', example.DEMO_SCRIPT[2]);
    },
    messages => {
      const r = toolResult(messages, 'c3');
      check(!r.failed && /North\s+165/.test(r.text) && /South\s+110/.test(r.text),
        'the fix ran on the DataFrame the failed call made', r.text);
      return toolUse('c4', example.DEMO_SCRIPT[3]);
    },
    messages => {
      const r = toolResult(messages, 'c4');
      check(!r.failed && r.text.includes('charts: 1 PNG'), 'the chart is announced', r.text);
      check(r.images.length === 1 && r.images[0].source.media_type === 'image/png', 'and attached', r.images.length);
      const png = Buffer.from(r.images[0].source.data, 'base64');
      check(png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'a real PNG', png.length);
      return { role: 'assistant', content: [{ type: 'text', text: 'North leads with 165.' }] };
    },
  ];
  const model = async (messages, tools) => {
    check(tools.length === 1 && tools[0].name === 'run_code' && tools[0].input_schema.required[0] === 'code',
      'the model is offered run_code with its schema', tools);
    check(steps.length > 0, 'the loop asked the model once more than scripted');
    return steps.shift()(messages);
  };
  const { text, messages } = await example.agentLoop(model, Sandbox, example.DEMO_TASK);
  check(text === 'North leads with 165.' && steps.length === 0, 'the final answer ends the loop', text);
  check(messages.length === 10, 'the task, four calls and their results, the answer', messages.length);
  check(seenSandbox && !(await sandboxIds()).has(seenSandbox), 'the sandbox is killed at the end', seenSandbox);
});

test('a model that fails: the error reaches the caller and the sandbox is killed all the same', async () => {
  const before = await sandboxIds();
  let calls = 0;
  const model = async () => {
    if (++calls === 1) return toolUse('c1', { code: 'x = 1' });
    throw new Error('model API: 529 overloaded');
  };
  let error = null;
  await example.agentLoop(model, Sandbox, 'anything').catch(e => { error = e; });
  check(error && error.message === 'model API: 529 overloaded', 'the model\'s error', String(error));
  const left = [...(await sandboxIds())].filter(id => !before.has(id));
  check(left.length === 0, 'no sandbox is left', left);
});

test('calls that are not run_code with code are refused to the model, not sent', async () => {
  const sandbox = { runCode: () => { throw new Error('must not be called'); } };
  for (const [name, input] of [['run_code', {}], ['run_code', { code: 42 }], ['other', { code: 'x' }], ['run_code', null]]) {
    const r = await example.runToolCall(sandbox, name, input);
    check(r.failed && r.text.startsWith('not a run_code call with code'), 'refused', [name, input, r]);
  }
});

test('the program: the offline demo, and clear refusals without a token or a model key', async () => {
  // A copy beside these tests' npm packages: what `npm install` in examples/ gives the original.
  const dir = mkdtempSync(join(tmpdir(), 'callisto-e2b-example-'));
  try {
    copyFileSync(examplePath, join(dir, 'e2b_agent_loop.mjs'));
    symlinkSync(join(here, 'node_modules'), join(dir, 'node_modules'));
    const run = (args, env) => spawnSync(process.execPath, [join(dir, 'e2b_agent_loop.mjs'), ...args], {
      encoding: 'utf8', timeout: 240000,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    });
    const demo = run([], { CALLISTO_URL: BASE_URL, CALLISTO_TOKEN: TOKEN });
    check(demo.status === 0, 'the demo ends well', [demo.status, demo.stdout.slice(-2000), demo.stderr]);
    const answer = demo.stdout.split('--- answer\n')[1] ?? '';
    check(answer.includes('4 calls returned') && answer.includes('KeyError') && /North\s+165/.test(answer) &&
      answer.includes('charts: 1 PNG'), 'and answers with what its calls returned', demo.stdout.slice(-3000));
    const noToken = run([], { CALLISTO_URL: BASE_URL });
    check(noToken.status === 2 && noToken.stderr.includes('CALLISTO_TOKEN (or E2B_API_KEY) is not set'),
      'no token: exit 2 with the reason', [noToken.status, noToken.stderr]);
    const noKey = run(['--model', 'claude-sonnet-4-5', 'a task'], { CALLISTO_URL: BASE_URL, CALLISTO_TOKEN: TOKEN });
    check(noKey.status === 2 && noKey.stderr.includes('ANTHROPIC_API_KEY is not set'),
      'a model without its key: exit 2 with the reason', [noKey.status, noKey.stderr]);
    const wrongToken = run([], { CALLISTO_URL: BASE_URL, CALLISTO_TOKEN: 'not-the-token' });
    check(wrongToken.status === 1 && /401|[Uu]nauthori[sz]ed|[Aa]uthenticat/.test(wrongToken.stderr),
      'a wrong token: the SDK\'s refusal, named', [wrongToken.status, wrongToken.stderr]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

await runTests({ timeoutMs: 600000 });
