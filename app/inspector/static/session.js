// One runtime, one thread: the published client's HttpAgent, and what the page records of it.
// The agent does the protocol work (SSE parsing, verifyEvents, state snapshots and JSON Patch
// deltas, the message history it sends back); the session only starts runs and tells the panels.

import { HttpAgent, Observable, buildResumeArray } from "./vendor/ag-ui-client.js";
import { authHeaders, rememberRequest } from "./api.js";
import { FRONTEND_TOOLS, runFrontendTool } from "./tools.js";

export const newId = (kind) => `${kind}-${crypto.randomUUID().slice(0, 8)}`;

export class Session {
  /** `runtime` is one entry of the capabilities listing; `olderClient` sends
   * forwardedProps.subagentEvents = false, as a client that rejects SUBAGENT_* would. */
  constructor(runtime, { olderClient = false } = {}) {
    this.runtime = runtime;
    this.olderClient = olderClient;
    this.agent = new HttpAgent({ url: runtime.route, headers: authHeaders(), threadId: newId("thread") });
    this.agent.use(paced);
    this.events = []; // {n, run, at (ms since its run started), event}
    this.runs = []; // {n, input, outcome, interrupts, error, done}
    this.busy = false;
    this.listeners = new Set();
  }

  /** `listener(kind, detail)`: "user", "run", "event", "args", "state", "tool", "done". */
  subscribe(listener) {
    this.listeners.add(listener);
  }

  emit(kind, detail) {
    for (const listener of this.listeners) listener(kind, detail);
  }

  send(text) {
    this.agent.addMessage({ id: newId("user"), role: "user", content: text });
    this.emit("user", text);
    return this.run({});
  }

  /** `answers`: {interruptId: {status: "resolved"|"cancelled", payload?}} for every open interrupt. */
  answer(answers) {
    return this.run({ resume: buildResumeArray(this.agent.pendingInterrupts, answers) });
  }

  async run(parameters) {
    const run = { n: this.runs.length + 1, input: null, outcome: null, interrupts: [], pending: [], error: null };
    const started = performance.now();
    this.runs.push(run);
    this.busy = true;
    this.emit("run", run);
    const subscriber = {
      onRunInitialized: ({ input }) => {
        run.input = input;
        rememberRequest(this.runtime.route, input);
      },
      onEvent: ({ event }) => {
        const entry = { n: this.events.length + 1, run: run.n, at: Math.round(performance.now() - started), event };
        this.events.push(entry);
        this.emit("event", entry);
      },
      // partialToolCallArgs is the client's completion of the arguments so far, as JSON text.
      onToolCallArgsEvent: ({ event, toolCallName, partialToolCallArgs }) =>
        this.emit("args", { toolCallId: event.toolCallId, toolCallName, args: parsed(partialToolCallArgs) }),
      onToolCallEndEvent: ({ event, toolCallName, toolCallArgs }) =>
        this.emit("args", { toolCallId: event.toolCallId, toolCallName, args: toolCallArgs }),
      onStateChanged: ({ state }) => this.emit("state", state),
      onRunFinishedEvent: ({ outcome, interrupts, pendingToolCallIds }) => {
        run.outcome = outcome;
        run.interrupts = interrupts ?? [];
        run.pending = pendingToolCallIds ?? [];
      },
      onRunFailed: ({ error }) => {
        run.error = error;
      },
    };
    const forwardedProps = this.olderClient ? { subagentEvents: false } : {};
    try {
      await this.agent.runAgent({ ...parameters, tools: FRONTEND_TOOLS, forwardedProps }, subscriber);
    } catch (error) {
      run.error ??= error;
    }
    this.busy = false;
    run.done = true;
    this.emit("done", run);
    if (!run.error && run.outcome === "success") await this.answerFrontendTools(run.pending);
  }

  /** What a frontend-tool host does: run each call it owns, answer with a tool message, run again. */
  async answerFrontendTools(pendingIds) {
    const calls = this.agent.messages.flatMap((message) => message.toolCalls ?? []);
    const answered = calls
      .filter((call) => pendingIds.includes(call.id))
      .map((call) => ({ call, content: runFrontendTool(call) }))
      .filter(({ content }) => content !== null);
    if (answered.length === 0) return;
    for (const { call, content } of answered) {
      this.agent.addMessage({ id: newId("tool"), role: "tool", toolCallId: call.id, content });
      this.emit("tool", { toolCallId: call.id, content });
    }
    await this.run({});
  }
}

function parsed(json) {
  if (typeof json !== "string") return json;
  try {
    return JSON.parse(json);
  } catch {
    return {};
  }
}

const SLICE_MS = 12;

/** Middleware (the client's public `use`): hands the client the stream in slices, letting the
 * browser paint and answer input between them. Why: the client applies each event in microtasks,
 * so a burst of thousands of buffered events would otherwise hold the main thread until it ends.
 * The slice grows while a tick's work stays under SLICE_MS and halves when it does not. */
function paced(input, next) {
  return new Observable((subscriber) => {
    const queue = [];
    let ended = null;
    let batch = 32;
    let lastTick = 0;
    let timer = null;
    const tick = () => {
      timer = null;
      const now = performance.now();
      if (lastTick) batch = now - lastTick > 2 * SLICE_MS ? Math.max(1, batch >> 1) : Math.min(4096, batch * 2);
      lastTick = now;
      for (const event of queue.splice(0, batch)) subscriber.next(event);
      if (queue.length > 0) timer = setTimeout(tick);
      else if (ended) ended.error ? subscriber.error(ended.error) : subscriber.complete();
      else lastTick = 0;
    };
    const schedule = () => {
      timer ??= setTimeout(tick);
    };
    const upstream = next.run(input).subscribe({
      next: (event) => {
        queue.push(event);
        schedule();
      },
      error: (error) => {
        ended = { error };
        schedule();
      },
      complete: () => {
        ended = {};
        schedule();
      },
    });
    return () => {
      clearTimeout(timer);
      upstream.unsubscribe();
    };
  });
}
