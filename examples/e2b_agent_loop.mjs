#!/usr/bin/env node
// The agent loop of examples/agent_loop.py (docs/agents.md), written for E2B's code
// interpreter SDK, unchanged, against Callisto: a model gets one tool, run_code; each call
// runs in the sandbox's kernel, which keeps its state for the whole conversation; the tool
// result carries stdout, stderr, results, charts and the full traceback, so the model can see
// its mistake and fix it. The sandbox is killed at the end, whatever happened.
//
//   cd examples && npm install          # @e2b/code-interpreter, from package.json here
//   export CALLISTO_URL=http://127.0.0.1:8888 CALLISTO_TOKEN=T
//   node e2b_agent_loop.mjs                                   # the scripted model, offline
//   ANTHROPIC_API_KEY=K node e2b_agent_loop.mjs --model claude-sonnet-4-5 "TASK"
//
// Pointing the SDK at Callisto is three variables (docs/e2b.md): E2B_API_URL and
// E2B_SANDBOX_URL are Callisto's URL, E2B_API_KEY the user's Callisto token. Set them yourself,
// or let this example set them from CALLISTO_URL and CALLISTO_TOKEN.

import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const RUN_CODE_TOOL = {
  name: 'run_code',
  description:
    'Run Python code or a bash script in a persistent Jupyter kernel. Variables, imports and ' +
    'files persist between calls. Returns stdout, stderr, the value of the last expression, ' +
    'charts as images, and on an exception the full traceback. numpy, pandas and matplotlib ' +
    'are installed; there is no network access.',
  input_schema: {
    type: 'object',
    properties: {
      code: { type: 'string', description: 'The code to run, in language (Python by default).' },
      language: {
        type: 'string', enum: ['python', 'bash'],
        description: 'python (the default); bash: a shell script run in the same working directory.',
      },
      timeout_seconds: {
        type: 'number', exclusiveMinimum: 0, maximum: 3600,
        description: 'Time limit; the code is interrupted when it is reached.',
      },
    },
    required: ['code'],
    additionalProperties: false,
  },
};

// What the model is shown of an E2B Execution: a text, and its charts as base64 PNGs.
export function executionReport(execution) {
  const parts = [];
  const stdout = execution.logs.stdout.join('');
  const stderr = execution.logs.stderr.join('');
  if (stdout) parts.push(`stdout:\n${stdout}`);
  if (stderr) parts.push(`stderr:\n${stderr}`);
  const pngs = [];
  for (const result of execution.results) {
    if (result.png) pngs.push(result.png);
    else if (result.text !== undefined) parts.push(`result:\n${result.text}`);
  }
  if (pngs.length) parts.push(`charts: ${pngs.length} PNG image(s), attached`);
  const error = execution.error;
  if (error) parts.push(`error:\n${error.traceback || `${error.name}: ${error.value}`}`);
  parts.unshift(`status: ${error ? 'error' : 'ok'}`);
  return { text: parts.join('\n'), pngs, failed: Boolean(error) };
}

// Carries out one call of the model's. A call the SDK could not make (the sandbox gone, a
// timeout) is reported to the model as a failed call rather than ending the conversation.
export async function runToolCall(sandbox, name, input) {
  if (name !== 'run_code' || typeof input !== 'object' || typeof input?.code !== 'string')
    return { text: `not a run_code call with code: ${name} ${JSON.stringify(input)}`, pngs: [], failed: true };
  const options = {};
  if (input.language && input.language !== 'python') options.language = input.language;
  if (input.timeout_seconds) options.timeoutMs = input.timeout_seconds * 1000;
  try {
    return executionReport(await sandbox.runCode(input.code, options));
  } catch (e) {
    return { text: `the call failed: ${e.name}: ${e.message}`, pngs: [], failed: true };
  }
}

// Runs the conversation until the model answers without a tool call (Anthropic's Messages
// shapes). Returns the final text and the transcript; the sandbox is killed in every case.
export async function agentLoop(model, Sandbox, task, { maxTurns = 10, log = () => {} } = {}) {
  const sandbox = await Sandbox.create({ timeoutMs: 10 * 60 * 1000 });
  const messages = [{ role: 'user', content: task }];
  try {
    for (let turn = 0; turn < maxTurns; ++turn) {
      const reply = await model(messages, [RUN_CODE_TOOL]);
      messages.push({ role: 'assistant', content: reply.content });
      const calls = reply.content.filter(b => b.type === 'tool_use');
      if (calls.length === 0)
        return { text: reply.content.filter(b => b.type === 'text').map(b => b.text).join(''), messages };
      const results = [];
      for (const call of calls) {
        log(`--- run_code ${JSON.stringify(call.input)}`);
        const { text, pngs, failed } = await runToolCall(sandbox, call.name, call.input);
        log(text);
        const images = pngs.map(data => ({ type: 'image', source: { type: 'base64', media_type: 'image/png', data } }));
        results.push({ type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text }, ...images], is_error: failed });
      }
      messages.push({ role: 'user', content: results });
    }
    throw new Error(`no final answer after ${maxTurns} turns`);
  } finally {
    await sandbox.kill();
  }
}

export const DEMO_TASK = 'Make a small sales.csv, total its revenue by region and plot it.';
// scriptedModel()'s calls: write a CSV, load it with a typo (a KeyError), the fix, a plot.
export const DEMO_SCRIPT = [
  { language: 'bash', code: "printf 'region,revenue\\nNorth,120\\nSouth,80\\nNorth,45\\nEast,95\\nSouth,30\\n' > sales.csv\nwc -l sales.csv" },
  { code: "import pandas as pd\nsales = pd.read_csv('sales.csv')\nsales.groupby('region')['revenu'].sum()" },
  { code: "totals = sales.groupby('region')['revenue'].sum()\nprint(totals)" },
  { code: "import matplotlib.pyplot as plt\ntotals.plot.bar(title='Revenue by region')\nplt.show()" },
];

// A stand-in for a model, with no key and no network: turn N makes the script's Nth call,
// whatever the results said; then it answers with the results it was shown.
export function scriptedModel(script = DEMO_SCRIPT) {
  return async messages => {
    const turn = messages.filter(m => m.role === 'assistant').length;
    if (turn < script.length)
      return { role: 'assistant', content: [{ type: 'tool_use', id: `call_${turn}`, name: 'run_code', input: script[turn] }] };
    const results = messages.slice(1).filter(m => m.role === 'user').flatMap(m => m.content.map(b => b.content[0].text));
    const text = `A scripted run (no model was asked). What its ${results.length} calls returned:` +
      results.map((r, i) => `\n\n--- call ${i + 1}\n${r}`).join('');
    return { role: 'assistant', content: [{ type: 'text', text }] };
  };
}

// A model on Anthropic's Messages API (POST /v1/messages).
export function anthropicModel(apiKey, modelName, { maxTokens = 4096, baseUrl = 'https://api.anthropic.com' } = {}) {
  return async (messages, tools) => {
    const response = await fetch(`${baseUrl}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: modelName, max_tokens: maxTokens, tools, messages }),
    });
    const body = await response.text();
    if (!response.ok) throw new Error(`model API: ${response.status} ${body}`);
    return { role: 'assistant', content: JSON.parse(body).content };
  };
}

async function main(argv) {
  let modelName = 'scripted';
  const rest = [];
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--model') modelName = argv[++i];
    else if (argv[i].startsWith('--model=')) modelName = argv[i].slice('--model='.length);
    else if (argv[i] === '--help' || argv[i] === '-h') {
      console.log('usage: node e2b_agent_loop.mjs [--model scripted|NAME] [TASK]\n' +
        '  CALLISTO_URL (default http://127.0.0.1:8888) and CALLISTO_TOKEN, or E2B_API_URL,\n' +
        '  E2B_SANDBOX_URL and E2B_API_KEY; ANTHROPIC_API_KEY for a --model other than scripted');
      return 0;
    } else rest.push(argv[i]);
  }
  const task = rest[0] ?? DEMO_TASK;
  const url = process.env.CALLISTO_URL ?? 'http://127.0.0.1:8888';
  // (process.env turns an undefined into the string "undefined": only set what is there.)
  process.env.E2B_API_URL ??= url;
  process.env.E2B_SANDBOX_URL ??= process.env.E2B_API_URL;
  if (process.env.CALLISTO_TOKEN) process.env.E2B_API_KEY ??= process.env.CALLISTO_TOKEN;
  if (!process.env.E2B_API_KEY) {
    console.error('e2b_agent_loop.mjs: CALLISTO_TOKEN (or E2B_API_KEY) is not set: the token of the Callisto server at ' + url);
    return 2;
  }
  let model;
  if (modelName === 'scripted') model = scriptedModel();
  else if (!process.env.ANTHROPIC_API_KEY) {
    console.error(`e2b_agent_loop.mjs: ANTHROPIC_API_KEY is not set: --model ${modelName} calls Anthropic's API with it. ` +
      'Without --model the scripted model runs, offline.');
    return 2;
  } else model = anthropicModel(process.env.ANTHROPIC_API_KEY, modelName);
  let Sandbox;
  try {
    ({ Sandbox } = await import('@e2b/code-interpreter'));
  } catch {
    console.error('e2b_agent_loop.mjs: @e2b/code-interpreter is not installed: run `npm install` in examples/');
    return 2;
  }
  console.log(`task: ${task}`);
  const { text } = await agentLoop(model, Sandbox, task, { log: line => console.log(line) });
  console.log(`--- answer\n${text}`);
  return 0;
}

// Run as a program, not imported.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(code => process.exit(code), e => {
    console.error(`e2b_agent_loop.mjs: ${e.name}: ${e.message}`);
    process.exit(1);
  });
}
