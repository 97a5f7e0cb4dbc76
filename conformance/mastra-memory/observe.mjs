// Runs Mastra's own ObservationalMemory (npm @mastra/memory, installed in .venv-conformance/mastra-memory) on the runs
// generate.py writes to stdin, model call by model call, and prints what it decided before each call.
// Usage (generate.py runs it):  node conformance/mastra-memory/observe.mjs <folder holding node_modules> < runs.json
//
// Standalone use, as Mastra's reference documents it for integrations of their own: an in-memory store
// (@mastra/core's InMemoryStore), getStatus on the messages so far, observe when it says shouldObserve (observe
// reflects by itself once the observations reach observationTokens). Async buffering is off (bufferTokens: false):
// the synchronous path our policy models. The Observer and Reflector call a stub language model (the AI SDK's
// LanguageModelV2 shape) that returns canned observations, so every decision is deterministic and offline.
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const env = path.resolve(process.argv[2]);
const mod = (p) => import(pathToFileURL(path.join(env, 'node_modules', p)).href);
const { ObservationalMemory } = await mod('@mastra/memory/dist/processors/index.js');
const { InMemoryStore } = await mod('@mastra/core/dist/storage/index.js');
const version = JSON.parse(readFileSync(path.join(env, 'node_modules/@mastra/memory/package.json'), 'utf8')).version;
const coreVersion = JSON.parse(readFileSync(path.join(env, 'node_modules/@mastra/core/package.json'), 'utf8')).version;
const { stubModel, T0 } = await import(pathToFileURL(path.join(path.dirname(new URL(import.meta.url).pathname), 'stub.mjs')).href);

// The neutral messages before `end` as Mastra's stored messages (format 2): a tool message's results join the
// tool-invocation parts of the assistant message that called them, as Mastra stores them; one second apart.
function toMastra(input, end, threadId) {
  const out = [];
  const owner = new Map();
  for (let i = 0; i < end; i++) {
    const m = input[i];
    const base = { id: m.id, role: m.role, createdAt: new Date(T0 + i * 1000), threadId, resourceId: 'csim', type: 'text' };
    if (m.role === 'user') {
      out.push({ ...base, content: { format: 2, parts: [{ type: 'text', text: m.text }] } });
    } else if (m.role === 'assistant') {
      const parts = m.text ? [{ type: 'text', text: m.text }] : [];
      for (const c of m.calls) {
        const inv = { state: 'call', toolCallId: c.id, toolName: c.name, args: JSON.parse(c.args) };
        parts.push({ type: 'tool-invocation', toolInvocation: inv });
        owner.set(c.id, inv);
      }
      out.push({ ...base, content: { format: 2, parts } });
    } else {
      for (const r of m.results) {
        const inv = owner.get(r.call_id);
        inv.state = 'result';
        inv.result = r.text;
      }
    }
  }
  return out;
}

async function replay(run) {
  const { messages } = run;
  const settings = { ...run.settings };
  if (typeof settings.messageTokens === 'object') {
    // A share of the whole conversation, as Mastra counts it (the long runs: a quarter).
    const whole = new ObservationalMemory({ storage: new InMemoryStore().stores.memory, model: stubModel(settings, []) });
    const all = toMastra(messages, messages.length, 'count');
    settings.messageTokens = Math.round((await whole.getTokenCounter().countMessagesAsync(all)) * settings.messageTokens.share);
  }
  const log = [];
  const storage = new InMemoryStore().stores.memory;
  const threadId = `thread-${run.name}`;
  await storage.saveThread({ thread: { id: threadId, resourceId: 'csim', title: run.name, createdAt: new Date(T0), updatedAt: new Date(T0), metadata: {} } });
  const om = new ObservationalMemory({
    storage,
    model: stubModel(settings, log),
    observation: { messageTokens: settings.messageTokens, bufferTokens: false },
    reflection: { observationTokens: settings.observationTokens },
  });
  const counter = om.getTokenCounter();
  // What the Reflector's trigger was asked with after each observation (the observations' tokens as Mastra counts them).
  let askedReflect;
  const maybeReflect = om.reflector.maybeReflect.bind(om.reflector);
  om.reflector.maybeReflect = (opts) => {
    askedReflect = opts.observationTokens;
    return maybeReflect(opts);
  };
  const decisions = [];
  let lastObservations = '';
  for (let k = 0; k < messages.length; k++) {
    if (messages[k].role !== 'assistant') continue;
    const msgs = toMastra(messages, k, threadId);
    const status = await om.getStatus({ threadId, resourceId: 'csim', messages: msgs });
    const lastUser = msgs.map((m) => m.role).lastIndexOf('user');
    const unobserved = om.getUnobservedMessages(msgs, status.record);
    const position = new Map(msgs.map((m, i) => [m.id, i]));
    const beforeLive = unobserved.filter((m) => position.get(m.id) < lastUser);
    const d = {
      at: messages[k].id,
      pending: status.pendingTokens,
      before_live: await counter.countMessagesAsync(beforeLive),
      threshold: status.threshold,
      observe: status.shouldObserve,
    };
    if (status.shouldObserve) {
      askedReflect = undefined;
      const res = await om.observe({ threadId, resourceId: 'csim', messages: msgs });
      d.reflect_asked_at = askedReflect;
      const left = new Set(om.getUnobservedMessages(msgs, res.record).map((m) => m.id));
      d.observed = unobserved.map((m) => m.id).filter((id) => !left.has(id));
      d.reflected = res.reflected;
      d.observation_tokens = res.record.observationTokenCount ?? 0;
      if (res.record.activeObservations !== lastObservations) {
        lastObservations = res.record.activeObservations;
        d.observations = lastObservations;
      }
    }
    decisions.push(d);
  }
  return { name: run.name, settings, decisions, model_calls: log };
}

const runs = JSON.parse(readFileSync(0, 'utf8'));
const results = [];
for (const run of runs) results.push(await replay(run));
process.stdout.write(JSON.stringify({ version, core: coreVersion, results }));
