// Runs Mastra's ObservationalMemory (npm @mastra/memory) the way its agent processor does, step by step, on the runs
// generate.py writes to stdin, and prints what it decided at every model call.
// Usage (generate.py runs it):  node conformance/mastra-memory/turns.mjs <folder holding node_modules> < runs.json
//
// observe.mjs calls the standalone API (getStatus, observe) with buffering off. This script drives the path an agent
// takes (ObservationalMemoryProcessor.processInputStep): one ObservationTurn per user message (om.beginTurn, start,
// end), and before every model call of the turn ObservationStep.prepare, which at step 0 activates buffered chunks
// once the threshold is reached, and at every step starts a background buffer when getStatus says shouldBuffer,
// observes synchronously at the threshold (waiting for a buffer in flight, activating chunks when there are any), and
// prunes what was observed from the MessageList: what is left is the prompt. A run's settings say whether buffering
// is on (Mastra's default: bufferTokens 0.2, bufferActivation 0.8, blockAfter 1.2) or off (bufferTokens: false).
// A buffer runs in the background in Mastra; here it is awaited (om.settled()) before the next model call, so every
// run is deterministic: a buffer started at one call is ready at the next.
//
// Each scripted assistant message is a message of its own ({ merge: false }), as observe.mjs stores them, so what
// Mastra decides maps message for message onto ours (Mastra's agent loop merges a turn's steps into one response
// message, split where observational memory seals it).
//
// The thread's history lives in @mastra/core's InMemoryStore. At each turn's start the turn loads, as Memory.getContext
// does with observational memory on, the stored messages newer than the record's lastObservedAt; the step's messages
// are saved by the step itself (ObservationStep.prepare saves the previous step's messages) and by turn.end().
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const env = path.resolve(process.argv[2]);
const mod = (p) => import(pathToFileURL(path.join(env, 'node_modules', p)).href);
const { ObservationalMemory } = await mod('@mastra/memory/dist/processors/index.js');
const { InMemoryStore } = await mod('@mastra/core/dist/storage/index.js');
const { MessageList } = await mod('@mastra/core/dist/agent/message-list/index.js');
const { stubModel, T0 } = await import(pathToFileURL(path.join(path.dirname(new URL(import.meta.url).pathname), 'stub.mjs')).href);
const version = JSON.parse(readFileSync(path.join(env, 'node_modules/@mastra/memory/package.json'), 'utf8')).version;
const coreVersion = JSON.parse(readFileSync(path.join(env, 'node_modules/@mastra/core/package.json'), 'utf8')).version;
const RESOURCE = 'csim';

// One neutral message as Mastra stores it (format 2): an assistant message carries its calls' results (state
// 'result'), as Mastra's agent loop fills them in before the next step; one second apart.
function toMastra(input, i, threadId, results) {
  const m = input[i];
  const base = { id: m.id, role: m.role, createdAt: new Date(T0 + i * 1000), threadId, resourceId: RESOURCE, type: 'text' };
  if (m.role === 'user') return { ...base, content: { format: 2, parts: [{ type: 'text', text: m.text }] } };
  const parts = m.text ? [{ type: 'text', text: m.text }] : [];
  for (const c of m.calls) {
    const inv = { state: 'call', toolCallId: c.id, toolName: c.name, args: JSON.parse(c.args) };
    if (results.has(c.id)) Object.assign(inv, { state: 'result', result: results.get(c.id) });
    parts.push({ type: 'tool-invocation', toolInvocation: inv });
  }
  return { ...base, content: { format: 2, parts } };
}

const chunksOf = (record) => (Array.isArray(record?.bufferedObservationChunks) ? record.bufferedObservationChunks : []);

async function replay(run) {
  const { messages } = run;
  const settings = { ...run.settings };
  const results = new Map(messages.filter((m) => m.role === 'tool').flatMap((m) => m.results.map((r) => [r.call_id, r.text])));
  const store = new InMemoryStore();
  const storage = store.stores.memory;
  const threadId = `turns-${settings.buffering ? 'buffered' : 'sync'}-${run.name}`;
  if (typeof settings.messageTokens === 'object') {
    const whole = new ObservationalMemory({ storage, model: stubModel(settings, []) });
    const all = messages.map((_, i) => i).filter((i) => messages[i].role !== 'tool').map((i) => toMastra(messages, i, 'count', results));
    settings.messageTokens = Math.round((await whole.getTokenCounter().countMessagesAsync(all)) * settings.messageTokens.share);
  }
  const now = new Date(T0);
  await storage.saveThread({ thread: { id: threadId, resourceId: RESOURCE, title: run.name, createdAt: now, updatedAt: now, metadata: {} } });
  const log = [];
  const observation = { messageTokens: settings.messageTokens, ...(settings.buffering ? {} : { bufferTokens: false }) };
  const om = new ObservationalMemory({ storage, model: stubModel(settings, log), observation, reflection: { observationTokens: settings.observationTokens } });
  // The memory provider a turn loads its history from (Memory.getContext's observational-memory branch).
  const memory = {
    async getContext() {
      const record = await om.getRecord(threadId, RESOURCE);
      const after = record?.lastObservedAt ? { dateRange: { start: new Date(new Date(record.lastObservedAt).getTime() + 1) } } : undefined;
      const listed = await storage.listMessages({ threadId, perPage: false, orderBy: { field: 'createdAt', direction: 'ASC' }, filter: after });
      return { messages: listed.messages, systemMessage: undefined, continuationMessage: undefined };
    },
    async persistMessages(msgs) {
      await storage.saveMessages({ messages: msgs });
    },
  };
  // The chunks the step activated, as om.activate returned them (a reflection drops the record's chunks too, so the
  // record alone does not tell an activation).
  let events = [];
  const wrap = (name, note) => {
    const real = om[name].bind(om);
    om[name] = async (opts) => {
      const res = await real(opts);
      note(opts, res);
      return res;
    };
  };
  wrap('activate', (_, res) => res.activated && events.push({ kind: 'activate', ids: res.activatedMessageIds ?? [] }));
  const decisions = [];
  let lastObservations = '';
  let turn;
  let ml;
  let step = 0;
  for (let k = 0; k < messages.length; k++) {
    const m = messages[k];
    if (m.role === 'tool') continue;
    if (m.role === 'user') {
      if (turn) await turn.end();
      await om.settled();
      ml = new MessageList({ threadId, resourceId: RESOURCE });
      ml.add(toMastra(messages, k, threadId, results), 'input');
      turn = om.beginTurn({ threadId, resourceId: RESOURCE, messageList: ml });
      await turn.start(memory);
      step = 0;
      continue;
    }
    // A model call: the step's prepare, and what it did: chunks buffered (awaited), activated, messages observed.
    const before = (await om.getRecord(threadId, RESOURCE)) ?? {};
    const chunksBefore = chunksOf(before);
    const live = ml.get.all.db().filter((x) => x.role !== 'system' && x.id !== 'om-continuation');
    const pre = await om.getStatus({ threadId, resourceId: RESOURCE, record: turn.record, messages: live });
    const unobservedBefore = om.getUnobservedMessages(live, turn.record).map((x) => x.id);
    events = [];
    const ctx = await turn.step(step).prepare();
    await om.settled();
    const after = await om.getRecord(threadId, RESOURCE);
    const chunksAfter = chunksOf(after);
    const idsBefore = new Set(chunksBefore.map((c) => c.cycleId));
    const d = {
      at: m.id,
      step,
      pending: pre.pendingTokens,
      threshold: pre.threshold,
      should_buffer: pre.shouldBuffer,
      pending_after: ctx.status.pendingTokens,
      activated: events.filter((e) => e.kind === 'activate').flatMap((e) => e.ids),
      observed: [],
      buffered: chunksAfter.filter((c) => !idsBefore.has(c.cycleId)).map((c) => ({ ids: c.messageIds, tokens: c.messageTokens })),
      chunks: chunksAfter.length,
      reflected: ctx.reflected,
    };
    if ((after.activeObservations ?? '') !== lastObservations) {
      lastObservations = after.activeObservations ?? '';
      d.observation_chars = lastObservations.length; // the text itself is the stub's: its length is what counts
    }
    const left = new Set(om.getUnobservedMessages(live, after).map((x) => x.id));
    const activated = new Set(d.activated);
    d.observed = unobservedBefore.filter((id) => !left.has(id) && !activated.has(id));
    decisions.push(d);
    ml.add(toMastra(messages, k, threadId, results), 'response', { merge: false });
    step += 1;
  }
  if (turn) await turn.end();
  await om.settled();
  return { name: run.name, settings, decisions, model_calls: log };
}

const runs = JSON.parse(readFileSync(0, 'utf8'));
const out = [];
for (const run of runs) out.push(await replay(run));
process.stdout.write(JSON.stringify({ version, core: coreVersion, results: out }));
