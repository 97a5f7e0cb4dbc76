// Runs the AI SDK's own pruneMessages (npm `ai`, installed in .venv-conformance/ai) on the cases generate.py
// writes to stdin; prints, per case, what it returned. Usage (generate.py runs it):
//   node conformance/ai/prune.mjs <folder holding node_modules/ai> < cases.json
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const env = path.resolve(process.argv[2]);
const require = createRequire(path.join(env, 'package.json'));
const { pruneMessages } = require('ai');
const version = require('ai/package.json').version;

// The neutral messages as AI SDK ModelMessages: consecutive tool messages become one (one per step in the SDK).
function toModel(input) {
  const out = [];
  for (const m of input) {
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
  return out;
}

// A part as the golden file writes it.
function describe(part) {
  if (part.type === 'tool-call' || part.type === 'tool-result') return `${part.type}:${part.toolCallId}`;
  return part.type;
}

const cases = JSON.parse(readFileSync(0, 'utf8'));
const results = cases.map(c => {
  const messages = toModel(c.input);
  const pruned = pruneMessages({ messages, ...c.settings });
  const view = pruned.map(m => ({
    role: m.role,
    id: m.role === 'tool' ? null : m._id,
    parts: typeof m.content === 'string' ? ['text'] : m.content.map(describe),
  }));
  return { name: c.name, sdk_messages: messages.length, view };
});
process.stdout.write(JSON.stringify({ version, results }));
