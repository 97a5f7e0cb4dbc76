// The stub language model observe.mjs and turns.mjs hand to Mastra's Observer and Reflector (the AI SDK's
// LanguageModelV2 shape), and the runs' start time. Deterministic and offline.
export const T0 = Date.parse('2026-01-05T09:00:00Z');
const USAGE = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

// The stub model: the Observer's n-th answer is one observation line of `words` words; the Reflector's is one short
// line (a reflection that condenses). Told apart by the Reflector's own system prompt.
export function stubModel(settings, log) {
  const reply = (opts) => {
    const system = opts.prompt.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
    const reflector = system.includes('observation reflections');
    log.push(reflector ? 'reflector' : 'observer');
    const n = log.length;
    const body = reflector
      ? `* 🔴 (09:00) condensed: the work so far, reflection ${n}`
      : `* 🔴 (09:00) observation ${n}: ${'noted '.repeat(settings.observation_words).trim()}`;
    return `<observations>\n${body}\n</observations>`;
  };
  return {
    specificationVersion: 'v2',
    provider: 'csim-stub',
    modelId: 'canned-observations',
    supportedUrls: {},
    async doGenerate(opts) {
      return { content: [{ type: 'text', text: reply(opts) }], finishReason: 'stop', usage: USAGE, warnings: [] };
    },
    async doStream(opts) {
      const text = reply(opts);
      const stream = new ReadableStream({
        start(c) {
          c.enqueue({ type: 'stream-start', warnings: [] });
          c.enqueue({ type: 'text-start', id: '0' });
          c.enqueue({ type: 'text-delta', id: '0', delta: text });
          c.enqueue({ type: 'text-end', id: '0' });
          c.enqueue({ type: 'finish', finishReason: 'stop', usage: USAGE });
          c.close();
        },
      });
      return { stream };
    },
  };
}

