// Runs Workshop's own compaction functions (cloudflare/cloudflare-os, packages/workshop-backend/src/agent-compaction.ts
// at the commit package.json names) under node on the cases make_cases.py builds (stdin); prints what they decided.
// generate.py runs it:
//   node conformance/cloudflare-os/decide.mjs <.venv-conformance/cloudflare-os> < cases.json
//
// The functions are the real ones: projectionMessageWeight (private in the file; exported here after stripping
// types), estimateProjectionTokens, shouldCompactChat, findProtectedFromSequence, findCompactionBoundary,
// protectRetainedReverts, startsAgentTurn. Three imports the file makes are stood in for, none of them called by
// those functions: the model table of workshop-shared/api (SUGGESTED_MODELS, WORKERS_AI_OUTPUT_LIMIT; used by
// getModelTokenLimits, which the cases replace by the input budget they give), composeCodeChange (used by
// buildCompactionState) and zeroUsage (buildSummaryPrompt). What calls the functions restates agent.ts, which cannot
// be loaded on its own (runAgent is the whole agent): the replay that turns chat records into model messages and
// their sources (sequence, canCut: the first model message of each record), and the context estimate before a turn.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { loadTs, stub } from '../ts_load.mjs';

const env = path.resolve(process.argv[2]);
const api = stub(env, 'stub-api.mjs', 'export const SUGGESTED_MODELS = {}; export const WORKERS_AI_OUTPUT_LIMIT = 32768;\n');
const change = stub(env, 'stub-code-change.mjs', 'export function composeCodeChange() { throw new Error("not under test"); }\n');
const invoke = stub(
  env,
  'stub-ai-invoke.mjs',
  'export function zeroUsage() { return {input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, ' +
    'cost: {input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0}}; }\n',
);
const A = await loadTs(env, path.join(env, 'src/packages/workshop-backend/src/agent-compaction.ts'), {
  rewrite: { '@gadgets/workshop-shared/api': api, '@gadgets/workshop-shared/code-change': change, './ai-invoke': invoke },
  expose: ['projectionMessageWeight'],
});
const { zeroUsage } = await import(path.join(env, 'loaded', 'stub-ai-invoke.mjs'));

const cases = JSON.parse(readFileSync(0, 'utf8'));
const TIMESTAMP = cases.timestamp;
const text = (m) => m.parts.filter((p) => p.kind !== 'thinking' && p.kind !== 'tool_call' && p.text).map((p) => p.text).join('\n');
const args = (a) => {
  try {
    return JSON.parse(a ?? '{}');
  } catch {
    return a ?? '';
  }
};

// agent.ts, the replay: the model messages of one log message (a chat record; its tool results ride with it).
function modelMessages(m, results, model) {
  if (m.parts.some((p) => p.kind === 'command') || m.role === 'system') return [];
  if (m.role === 'user') return [{ role: 'user', content: text(m), timestamp: TIMESTAMP }];
  // makeReplayAssistantMessage, with the step's thinking as a stored snapshot carries it
  const content = m.parts.filter((p) => p.kind === 'thinking').map((p) => ({ type: 'thinking', thinking: p.text }));
  const t = m.parts.filter((p) => ['text', 'change', 'revert'].includes(p.kind) && p.text).map((p) => p.text).join('\n');
  if (t !== '') content.push({ type: 'text', text: t });
  for (const p of m.parts.filter((p) => p.kind === 'tool_call')) {
    content.push({ type: 'toolCall', id: p.call_id, name: p.name, arguments: args(p.args) });
  }
  const out = [
    { role: 'assistant', content, api: model.api, provider: model.provider, model: model.id, usage: zeroUsage(),
      stopReason: 'stop', timestamp: TIMESTAMP },
  ];
  for (const r of results) {
    for (const p of r.parts) {
      out.push({ role: 'toolResult', toolCallId: p.call_id, toolName: p.name, content: [{ type: 'text', text: p.text }],
        isError: p.is_error ?? false, timestamp: TIMESTAMP });
    }
  }
  return out;
}

// The chat log from `start` to `n` as records, and the projection runAgent builds from it. A record's sequence is
// its log index less the system prompt's place: a chat's first record has sequence 0 (overseer.ts, nextChatSequence:
// `nextSequence || 0`), and Workshop's chat log holds no system prompt.
function replay(log, start, n, summary, model) {
  const off = log[0].role === 'system' ? 1 : 0;
  const chat = [];
  const projection = [];
  if (summary !== null) projection.push({ message: { role: 'user', content: summary, timestamp: TIMESTAMP } });
  const changeAt = new Map();
  log.slice(0, n).forEach((m, i) => m.parts.forEach((p) => p.kind === 'change' && !changeAt.has(p.ref) && changeAt.set(p.ref, i)));
  const resolved = new Set(log.slice(0, n).flatMap((m) => m.resolves ?? []));
  for (let i = Math.max(start, 1); i < n; i += 1) {
    const m = log[i];
    if (m.role === 'tool') continue;
    const command = m.parts.find((p) => p.kind === 'command');
    if (command) {
      chat.push({ type: 'slashCommand', sequence: i - off, request: { id: { builtin: true, commandId: command.name } } });
    } else {
      chat.push({ type: 'message', sequence: i - off, author: { type: m.role === 'user' ? 'user' : 'agent' } });
    }
    for (const p of m.parts.filter((p) => p.kind === 'revert' && changeAt.has(p.ref))) {
      chat.push({ type: 'revert', sequence: i - off + 0.25, revertFrom: changeAt.get(p.ref) - off });
    }
    if (m.pending && !resolved.has(m.id)) {
      chat.push({ type: 'connectionRequest', state: 'pending', sequence: i - off + 0.5 });
    }
    const results = [];
    for (let j = i + 1; j < n && log[j].role === 'tool'; j += 1) results.push(log[j]);
    modelMessages(m, results, model).forEach((message, k) =>
      projection.push({ message, sequence: i - off, canCut: k === 0 }),
    );
  }
  return { chat, projection, off };
}

function decision(log, d, model) {
  d = { summary: null, last_request_at: null, last_input: 0, last_output: 0, budget: d.window - cases.reserve, ...d };
  const summary = d.summary === null ? null : cases.summaries[d.summary];
  const { chat, projection, off } = replay(log, d.start, d.n, summary, model);
  // runAgent: the last step's totalTokens plus the estimate of what it did not cover; with no measured total, the
  // whole projection plus the system prompt.
  const measured = d.last_request_at === null ? 0 : d.last_input + d.last_output;
  const lastMeasured = chat.findLast((c) => c.type === 'message' && c.author.type === 'agent')?.sequence;
  const system = log[0].role === 'system' ? text(log[0]) : '';
  const contextTokens =
    measured > 0 && lastMeasured !== undefined
      ? measured +
        A.estimateProjectionTokens(
          projection.filter(
            ({ message, sequence }) =>
              sequence !== undefined &&
              (sequence > lastMeasured || (sequence === lastMeasured && message.role === 'toolResult')),
          ),
        )
      : A.estimateProjectionTokens(projection) + Math.ceil(system.length / 4);
  const out = { context_tokens: contextTokens };
  const compactionTurn = d.trigger === 'manual';
  out.triggered = compactionTurn || A.shouldCompactChat(contextTokens, d.budget);
  if (!out.triggered) return out;
  const compactedTo = d.summary === null ? undefined : d.start - off;
  const raw = A.findCompactionBoundary(projection, d.budget, contextTokens, compactedTo, A.findProtectedFromSequence(chat));
  const boundary = A.protectRetainedReverts(raw, chat, compactedTo);
  // back to log indices
  out.boundary = boundary === undefined ? null : boundary + off;
  return out;
}

const weights = cases.weights.map((c) => {
  const log = c.messages;
  const out = [];
  for (let i = 0; i < log.length; i += 1) {
    if (log[i].role === 'tool') continue;
    const results = [];
    for (let j = i + 1; j < log.length && log[j].role === 'tool'; j += 1) results.push(log[j]);
    out.push(modelMessages(log[i], results, cases.model).reduce((s, m) => s + A.projectionMessageWeight(m), 0));
  }
  return out;
});
const summaries = cases.summary_texts.map((t) => A.projectionMessageWeight({ role: 'user', content: t, timestamp: TIMESTAMP }));
const decisions = cases.decisions.map((d) => decision(cases.conversations[d.conversation], d, cases.model));
process.stdout.write(JSON.stringify({ weights, summaries, decisions }));
