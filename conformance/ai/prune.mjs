// Runs the AI SDK's own pruneMessages (npm `ai`, installed in .venv-conformance/ai) on what generate.py writes to
// stdin: {cases, long}. Prints, per case, what it returned; per long run, what it returned before every model call.
// Usage (generate.py runs it):
//   node conformance/ai/prune.mjs <folder holding node_modules/ai> < input.json
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const env = path.resolve(process.argv[2]);
const require = createRequire(path.join(env, 'package.json'));
const { pruneMessages } = require('ai');
const version = require('ai/package.json').version;

// The neutral messages as AI SDK ModelMessages: consecutive tool messages become one (one per step in the SDK).
// `at[i]`: how many ModelMessages hold the neutral messages before message i.
function toModel(input) {
  const out = [];
  const at = [];
  for (const m of input) {
    at.push(out.length);
    if (m.role === 'user') {
      out.push({ role: 'user', content: m.text, _id: m.id });
    } else if (m.role === 'assistant') {
      const content = [];
      if (m.thinking !== undefined) content.push({ type: 'reasoning', text: m.thinking });
      if (m.text) content.push({ type: 'text', text: m.text });
      for (const c of m.calls) {
        content.push({ type: 'tool-call', toolCallId: c.id, toolName: c.name, input: JSON.parse(c.args) });
      }
      out.push({ role: 'assistant', content, _id: m.id });
    } else {
      const parts = m.results.map(r => ({
        type: 'tool-result',
        toolCallId: r.call_id,
        toolName: r.name,
        output: { type: 'text', value: r.text },
      }));
      const last = out[out.length - 1];
      if (last && last.role === 'tool') last.content.push(...parts);
      else out.push({ role: 'tool', content: parts, _id: m.id });
    }
  }
  return { messages: out, at };
}

// A part as the golden file writes it.
function describe(part) {
  if (part.type === 'tool-call' || part.type === 'tool-result') return `${part.type}:${part.toolCallId}`;
  return part.type;
}

function view(pruned) {
  return pruned.map(m => ({
    role: m.role,
    id: m.role === 'tool' ? null : m._id,
    parts: typeof m.content === 'string' ? ['text'] : m.content.map(describe),
  }));
}

const input = JSON.parse(readFileSync(0, 'utf8'));
const results = input.cases.map(c => {
  const { messages } = toModel(c.input);
  const pruned = pruneMessages({ messages, ...c.settings });
  return { name: c.name, sdk_messages: messages.length, view: view(pruned) };
});
// A long run: pruneMessages on the messages before every assistant message (each the reply to one model call), as
// an application calls it in prepareStep; the list grows, nothing carried from one call to the next.
const long = input.long.map(run => {
  const { messages, at } = toModel(run.messages);
  const calls = [];
  run.messages.forEach((m, i) => {
    if (m.role !== 'assistant') return;
    const before = messages.slice(0, at[i]).map(x => ({ ...x, content: Array.isArray(x.content) ? [...x.content] : x.content }));
    calls.push({ at: m.id, sdk_messages: before.length, view: view(pruneMessages({ messages: before, ...run.settings })) });
  });
  return { name: run.name, calls };
});
process.stdout.write(JSON.stringify({ version, results, long }));
