process.env.E2B_API_URL = process.env.CALLISTO_URL;
process.env.E2B_SANDBOX_URL = process.env.CALLISTO_URL;
process.env.E2B_API_KEY = process.env.CALLISTO_TOKEN;
const { Sandbox } = await import('@e2b/code-interpreter');
const sbx = await Sandbox.create({ timeoutMs: 300000 });
await sbx.runCode('x = 42');
const ctx = await sbx.createCodeContext({ language: 'python' });
await sbx.runCode('y = 7', { context: ctx });
console.log(sbx.sandboxId);
