// Runs effect-agent's own compaction code (danieljvdm/effect-agent, packages/engine/src/compaction.ts and
// packages/core/src/tool-result.ts at the commit package.json names) under node, with the effect version that commit
// pins, on the cases make_cases.py builds (stdin); prints what it decided (stdout). generate.py runs it:
//   node conformance/effect-agent/decide.mjs <.venv-conformance/effect-agent> < cases.json
//
// The functions are the real ones: estimateMessageTokens, estimatePromptTokens, buildCompactedView, choosePruneBound,
// chooseSummarizeCut, collectCoveredMessages, renderForSummary, applyToolResultBounds. What calls them here restates
// packages/engine/src/index.ts, which cannot be loaded on its own (it is the whole engine): how history holds each
// message (makeInitialPrompt, promptFromTurnParts, the tool message of a settled batch, boundEncodedToolResult),
// nextContextEstimate, and the order of compactContext (prune, the check after it, the summarise cut), each marked
// below with the function it follows.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { loadTs } from '../ts_load.mjs';

const env = path.resolve(process.argv[2]);
const require = createRequire(path.join(env, 'package.json'));
const effectVersion = require('effect/package.json').version;
const { Prompt } = await import(require.resolve('effect/unstable/ai'));
const { Schema } = await import(require.resolve('effect'));
const C = await loadTs(env, path.join(env, 'src/packages/engine/src/compaction.ts'));
const T = await loadTs(env, path.join(env, 'src/packages/core/src/tool-result.ts'));

// A result as history holds it: the value of its JSON text (a string result is the string itself).
const resultValue = (p) => (p.is_json ? JSON.parse(p.text) : p.text);
const params = (args) => {
  try {
    return JSON.parse(args ?? '{}');
  } catch {
    return args ?? '';
  }
};

// One log message, or the run of tool messages answering one assistant message, as a Prompt message.
function promptMessage(group) {
  const m = group[0];
  if (m.role === 'system') {
    // makeInitialPrompt: string instructions become one system message.
    return Prompt.makeMessage('system', { content: m.parts.map((p) => p.text).filter((t) => t).join('\n') });
  }
  if (m.role === 'user') {
    // makeInitialPrompt / Prompt.make(string): a text part per piece of the user's text.
    return Prompt.makeMessage('user', { content: m.parts.map((p) => Prompt.makePart('text', { text: p.text })) });
  }
  if (m.role === 'assistant') {
    // promptFromTurnParts -> Prompt.fromResponseParts over the step's response parts (empty provider metadata).
    const parts = m.parts.map((p) =>
      p.kind === 'thinking'
        ? { type: 'reasoning', text: p.text, metadata: {} }
        : p.kind === 'tool_call'
          ? { type: 'tool-call', id: p.call_id, name: p.name, params: params(p.args), providerExecuted: false, metadata: {} }
          : { type: 'text', text: p.text, metadata: {} },
    );
    const prompt = Prompt.fromResponseParts(parts);
    if (prompt.content.length !== 1) throw new Error(`assistant message ${m.id} made ${prompt.content.length} messages`);
    return prompt.content[0];
  }
  // The settled batch's tool message (index.ts, after applyRepeatedFailurePolicy): every result of the batch.
  return Prompt.makeMessage('tool', {
    content: group.flatMap((t) =>
      t.parts.map((p) =>
        Prompt.makePart('tool-result', {
          id: p.call_id,
          name: p.name,
          result: resultValue(p),
          isFailure: p.is_error ?? false,
          providerExecuted: false,
        }),
      ),
    ),
  });
}

// Log messages [0, n) as the Prompt history, and each Prompt message's range of log indices.
function history(log, n) {
  const prompt = [];
  const spans = [];
  let i = 0;
  while (i < n) {
    let j = i + 1;
    if (log[i].role === 'tool') while (j < n && log[j].role === 'tool') j += 1;
    prompt.push(promptMessage(log.slice(i, j)));
    spans.push([i, j]);
    i = j;
  }
  return { prompt, spans };
}

// A log index (a bound between messages) as a Prompt index: the Prompt messages that start before it.
const toPrompt = (spans, logIndex) => spans.filter(([a]) => a < logIndex).length;
const toLog = (spans, promptIndex, n) => (promptIndex < spans.length ? spans[promptIndex][0] : n);
const sha = (text) => createHash('sha256').update(text).digest('hex').slice(0, 16);

function decision(log, d, cfg, summaries) {
  d = { summary: null, last_request_at: null, last_input: 0, last_output: 0, ...d };
  const { prompt, spans } = history(log, d.n);
  const firstUser = log.findIndex((m) => m.role === 'user');
  // initialCompactionState, then the protected block of the initial prompt (instructions and input) and the
  // compaction state the port's view stands for.
  const state = C.initialCompactionState();
  state.protectedStart = 0;
  state.protectedEnd = firstUser >= 0 ? toPrompt(spans, firstUser + 1) : 0;
  state.clearedThrough = toPrompt(spans, d.cleared_through);
  state.summary = d.summary === null ? undefined : summaries[d.summary];
  state.summarizedThrough = d.summary === null ? 0 : toPrompt(spans, d.start);
  if (d.last_request_at !== null) {
    // compactedOutgoing: the view's length when the last call went out (the view has not changed since).
    state.lastViewLength = C.buildCompactedView(history(log, d.last_request_at).prompt, state).length;
  }
  const lastInput = d.last_request_at === null ? 0 : d.last_input;
  const lastOutput = d.last_request_at === null ? 0 : d.last_output;
  // nextContextEstimate
  const view = C.buildCompactedView(prompt, state);
  const estimate =
    lastInput > 0 && state.lastViewLength >= 0 && state.lastViewLength <= view.length
      ? lastInput + lastOutput + C.estimatePromptTokens(view.slice(state.lastViewLength))
      : C.estimatePromptTokens(view);
  const out = { estimate, action: 'none' };
  // The pre-Turn seam: estimate + outputContractTokens > contextTokenLimit (no output contract here).
  if (d.trigger === 'auto' && !(estimate > cfg.limit)) return out;
  // compactContext(..., forceSummarize = the overflow path)
  const force = d.trigger === 'overflow';
  if (!force && cfg.mode !== 'summarize') {
    const bound = C.choosePruneBound(prompt, state, cfg.keep);
    if (bound > state.clearedThrough) {
      state.clearedThrough = bound;
      out.prune = toLog(spans, bound, d.n);
      out.after = C.estimatePromptTokens(C.buildCompactedView(prompt, state));
      if (out.after <= cfg.limit) {
        out.action = 'prune';
        return out;
      }
    }
  }
  if (cfg.mode === 'prune' && !force) {
    out.action = out.prune === undefined ? 'nothing' : 'prune';
    return out;
  }
  const cut = C.chooseSummarizeCut(prompt, state, cfg.keep);
  const covered = C.collectCoveredMessages(prompt, state, cut);
  out.cut = toLog(spans, cut, d.n);
  if (covered.length === 0) {
    out.action = out.prune === undefined ? 'nothing' : 'prune';
    return out;
  }
  const transcript = C.renderForSummary(covered, state.summary);
  out.action = 'summarize';
  out.covered = covered.length;
  out.transcript = { length: transcript.length, sha256: sha(transcript) };
  return out;
}

const cases = JSON.parse(readFileSync(0, 'utf8'));
const messages = cases.messages.map((c) => {
  const { prompt } = history(c.messages, c.messages.length);
  return prompt.map((m) => ({ json: JSON.stringify(m), tokens: C.estimateMessageTokens(m) }));
});
const bounds = cases.bounds.map((c) => {
  // boundEncodedToolResult: JSON.stringify of the encoded result, bounded, decoded back to the value history keeps.
  const encoded = JSON.stringify(resultValue(c.part));
  const bounded = T.applyToolResultBounds(encoded, T.ToolResultBounds.make({ maxBytes: c.max_bytes }));
  const kept = Schema.decodeSync(Schema.fromJsonString(Schema.Unknown))(bounded);
  return { bounded: bounded === encoded ? null : bounded, kept_json: JSON.stringify(kept) };
});
const byName = Object.fromEntries(cases.render.map((c) => [c.name, c]));
const render = cases.render.map((c) => {
  const covered = typeof c.covered === 'string' ? byName[c.covered].covered : c.covered;
  const { prompt } = history(covered, covered.length);
  const text = C.renderForSummary(prompt, c.previous ?? undefined);
  // a long one by its length and digest (the golden file would hold 80,000 characters of it)
  return text.length > 4000 ? { length: text.length, sha256: sha(text) } : { text, length: text.length };
});
const decisions = cases.decisions.map((d) =>
  decision(cases.conversations[d.conversation], d, cases.configs[d.config], cases.summaries),
);
process.stdout.write(
  JSON.stringify({
    effect: effectVersion,
    instruction: { length: C.COMPACTION_INSTRUCTION.length, lines: C.COMPACTION_INSTRUCTION.split('\n').length },
    messages,
    bounds,
    render,
    decisions,
  }),
);
