// Runs pi's own compaction functions (npm @earendil-works/pi-coding-agent, installed in
// .venv-conformance/pi-coding-agent) on the cases and long conversations generate.py writes to stdin; prints, per
// case and per model call, what they decided. Usage (generate.py runs it):
//   node conformance/pi-coding-agent/decide.mjs <folder holding node_modules> < input.json
//
// Called: SessionManager.inMemory, appendMessage, appendCompaction, appendContextEdit, buildSessionProjection and
// getBranch (dist/core/session-manager.js); calculateContextTokens, estimateProjectedContextTokens, shouldCompact,
// prepareCompaction and estimateTokens (dist/core/compaction/compaction.js). What AgentSession does around them
// (dist/core/agent-session.js, not runnable without a model registry, settings and extensions) is followed here:
// `_checkCompaction` after a run's last reply (its usage, calculateContextTokens, lines 2496-2615), the threshold
// check before each further model call of a run (`_compactBeforeNextAssistantResponse`, estimateProjectedContextTokens,
// lines 476-490 and 597-599), both before the next prompt or steering message is appended; on overflow the failed
// attempt persisted and omitted (`_omitRecoveryAttempt`, a context edit with no replacement, lines 906-931) before
// prepareCompaction (`_runAutoCompaction`, lines 2626-2640).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const env = path.resolve(process.argv[2]);
const pkgDir = path.join(env, 'node_modules', '@earendil-works', 'pi-coding-agent');
const version = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;
const load = (rel) => import(pathToFileURL(path.join(pkgDir, 'dist', rel)).href);
const compaction = await load('core/compaction/compaction.js');
const { SessionManager } = await load('core/session-manager.js');
const {
  calculateContextTokens,
  estimateProjectedContextTokens,
  estimateTokens,
  prepareCompaction,
  shouldCompact,
} = compaction;

const FAKE_SUMMARY = 'FAKE SUMMARY';
const ZERO_COST = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };

function usageOf(input, output) {
  return { input, output, cacheRead: 0, cacheWrite: 0, totalTokens: input + output, cost: ZERO_COST };
}

// The neutral messages as pi AgentMessages: a tool message becomes one toolResult per result (pi's shape).
function toPi(m, usage) {
  if (m.role === 'user') return [{ role: 'user', content: [{ type: 'text', text: m.text }], timestamp: 1 }];
  if (m.role === 'assistant') {
    const content = [];
    if (m.thinking !== undefined) content.push({ type: 'thinking', thinking: m.thinking });
    if (m.text) content.push({ type: 'text', text: m.text });
    for (const c of m.calls) content.push({ type: 'toolCall', id: c.id, name: c.name, arguments: JSON.parse(c.args) });
    return [{
      role: 'assistant', content, api: 'faux', provider: 'faux', model: 'faux-1',
      usage: usageOf(usage?.input ?? 0, usage?.output ?? 0),
      stopReason: m.calls.length ? 'toolUse' : 'stop', timestamp: 1,
    }];
  }
  return m.results.map(r => ({
    role: 'toolResult', toolCallId: r.call_id, toolName: r.name,
    content: [{ type: 'text', text: r.text }], isError: false, timestamp: 1,
  }));
}

// A session being replayed: pi's SessionManager, with each entry id mapped back to the case's message id.
class Replay {
  constructor(system) {
    this.sm = SessionManager.inMemory();
    this.ids = new Map();
    this.lastAssistant = undefined;
    this.estimates = {};
    if (system !== undefined) this.append({ role: 'system', content: system, timestamp: 0 }, 'system');
  }
  append(piMessage, id) {
    const entryId = this.sm.appendMessage(piMessage);
    this.ids.set(entryId, id);
    this.estimates[id] = (this.estimates[id] ?? 0) + estimateTokens(piMessage);
    if (piMessage.role === 'assistant') this.lastAssistant = piMessage;
    return entryId;
  }
  add(m, usage) {
    for (const p of toPi(m, usage)) this.append(p, m.id);
  }
  idOf(entry) {
    return this.ids.get(entry.id) ?? `<${entry.type}>`;
  }
  // pi's automatic check at a model call: after a run's last reply (its usage) or before a further call of the
  // run (usage plus the estimate of what came after it). None before the first reply.
  tokens() {
    if (this.lastAssistant === undefined) return null;
    const entries = this.sm.getBranch();
    const last = entries[entries.length - 1];
    const afterReply = last.type === 'message' && last.message === this.lastAssistant;
    if (afterReply) return { check: 'after-run', tokens: calculateContextTokens(this.lastAssistant.usage) };
    const estimate = estimateProjectedContextTokens(this.sm.buildSessionProjection(), entries);
    return { check: 'before-call', tokens: estimate.tokens };
  }
  prepare(settings) {
    const prep = prepareCompaction(this.sm.getBranch(), settings);
    if (prep === undefined) return null;
    const byEntry = new Map(this.sm.getBranch().map(e => [e.id, e]));
    const ids = msgs => [...new Set(msgs.map(m => this.messageId(m)))];
    return {
      first_kept: this.idOf(byEntry.get(prep.firstKeptEntryId)),
      first_kept_entry: byEntry.get(prep.firstKeptEntryId).type,
      split_turn: prep.isSplitTurn,
      summarized: ids(prep.messagesToSummarize),
      turn_prefix: ids(prep.turnPrefixMessages),
      previous_summary: prep.previousSummary ?? null,
      tokens_before: prep.tokensBefore,
    };
  }
  messageId(message) {
    const entries = this.sm.getBranch().filter(e => e.type === 'message');
    const entry = entries.find(e => e.message === message) ?? entries.find(e => sameMessage(e.message, message));
    return entry ? this.ids.get(entry.id) : '<unknown>';
  }
  compact(prep) {
    const entry = this.sm.getBranch().find(e => this.ids.get(e.id) === prep.first_kept);
    this.sm.appendCompaction(FAKE_SUMMARY, entry.id, prep.tokens_before);
  }
  contextEstimate() {
    return this.sm.buildSessionProjection().messages.reduce((s, m) => s + estimateTokens(m), 0);
  }
}

function sameMessage(a, b) {
  return a.role === b.role && a.timestamp === b.timestamp && JSON.stringify(a.content) === JSON.stringify(b.content);
}

// A hand-made case: its messages up to a model call (or a /compact, or an overflow), decided once.
function runCase(c) {
  const r = new Replay(c.system);
  const msgs = c.input;
  let end = msgs.length;
  if (c.kind !== 'overflow') while (end > 0 && msgs[end - 1].role === 'user') end--;
  for (const [k, m] of msgs.entries()) {
    if (k === end) break;
    r.add(m, m.usage);
    if (c.compaction && m.id === c.compaction.after) {
      const first = r.sm.getBranch().find(e => r.ids.get(e.id) === c.compaction.first_kept);
      r.sm.appendCompaction(c.compaction.summary, first.id, 0);
    }
  }
  const s = { enabled: true, reserveTokens: c.settings.reserveTokens, keepRecentTokens: c.settings.keepRecentTokens };
  let check = null;
  let triggered = true;
  if (c.kind === 'auto') {
    check = r.tokens();
    triggered = check !== null && shouldCompact(check.tokens, c.settings.contextWindow, s);
  }
  if (c.kind === 'overflow') {
    for (const m of msgs.slice(end)) r.add(m);
    const failed = r.append({
      role: 'assistant', content: [], api: 'faux', provider: 'faux', model: 'faux-1', usage: usageOf(0, 0),
      stopReason: 'error', errorMessage: 'prompt is too long', timestamp: 2,
    }, '<failed>');
    r.sm.appendContextEdit(failed, null);
  }
  const prepared = triggered ? r.prepare(s) : null;
  return {
    name: c.name,
    check: check?.check ?? null,
    tokens: check?.tokens ?? null,
    triggered: c.kind === 'auto' ? triggered : null,
    prepared,
    estimates: r.estimates,
  };
}

// A long conversation, model call by model call: pi's check before each call, on the session as it stands before
// the prompt (or steering) messages that precede the call; a compaction appended with the fake summary when it
// fires. Each reply's usage is pi's own estimate of the context it answered and of itself.
function runLong(conv, settings) {
  const r = new Replay(conv.system);
  const s = { enabled: true, reserveTokens: settings.reserveTokens, keepRecentTokens: settings.keepRecentTokens };
  const decisions = [];
  let pending = [];
  for (const m of conv.messages) {
    if (m.role === 'user') {
      pending.push(m);
      continue;
    }
    if (m.role === 'tool') {
      r.add(m);
      continue;
    }
    const check = r.tokens();
    const triggered = check !== null && shouldCompact(check.tokens, settings.contextWindow, s);
    const prepared = triggered ? r.prepare(s) : null;
    if (prepared) r.compact(prepared);
    for (const u of pending) r.add(u);
    pending = [];
    const usage = { input: r.contextEstimate(), output: estimateTokens(toPi(m)[0]) };
    r.add(m, usage);
    decisions.push({
      at: m.id,
      check: check?.check ?? null,
      tokens: check?.tokens ?? null,
      triggered,
      kept_from: prepared?.first_kept ?? null,
      split_turn: prepared?.split_turn ?? null,
      usage,
    });
  }
  return { conversation: conv.name, settings, decisions, estimates: r.estimates };
}

const input = JSON.parse(readFileSync(0, 'utf8'));
const cases = input.cases.map(runCase);
const long = input.long.map(l => runLong(l.conversation, l.settings));
process.stdout.write(JSON.stringify({ version, cases, long }));
