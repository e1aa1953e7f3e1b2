// The published @ag-ui/client, driven from the Python suite: code nobody here wrote judges our wire.
//
//   node harness.mjs spec.json      (or "-" to read the spec from stdin)
//
// Spec (or a JSON array of specs, answered with an array of reports), one of:
//   {"mode": "live", "url": "http://127.0.0.1:8000/strands/agent", "threadId"?: "...",
//    "state"?: {}, "tools"?: [...], "forwardedProps"?: {},
//    "turns": [{"message": "hi"}, {"resume": "resolved", "payload"?: any}, {"answerToolCalls": "result"}]}
//   {"mode": "replay", "runs": [[event, ...], ...], "state"?: {}, "messages"?: [...]}
//
// live:   an HttpAgent runs each turn on one thread. A "resume" turn answers every pending
//         interrupt through the client's own buildResumeArray, so the second request carries the
//         top-level `resume` exactly as the client builds it. "answerToolCalls" appends a tool
//         message for every tool call that has no result yet (what a frontend-tool host does).
// replay: each recorded response is one runAgent() of an agent whose run() replays it, so a
//         capture goes through the same pipeline as a live stream (compatibility boundary,
//         schema enforcement, chunk expansion, verifyEvents, state and message application).
//
// Prints one JSON object: per run the input sent, the events received, the client's error (the
// verifier's, the schema's or the transport's), what verifyEvents alone says, and every warning
// the client logged (a STATE_DELTA it cannot apply is only a warning); then the final state and
// messages and whether every run succeeded.
import { readFileSync } from "node:fs";
import { AbstractAgent, HttpAgent, buildResumeArray, transformChunks, verifyEvents } from "@ag-ui/client";
import { from, lastValueFrom, tap, toArray } from "rxjs";

const source = !process.argv[2] || process.argv[2] === "-" ? 0 : process.argv[2]; // 0 = stdin
const request = JSON.parse(readFileSync(source, "utf8"));
let runs = [];
let current = null;

// The client reports some problems (unappliable patches, unknown ids) only through the console.
for (const level of ["warn", "error"]) {
  console[level] = (...args) => {
    const text = args.map((arg) =>
      arg instanceof Error ? arg.message : typeof arg === "string" ? arg : JSON.stringify(arg),
    );
    (current?.warnings ?? orphanWarnings).push(`${level}: ${text.join(" ")}`);
  };
}
let orphanWarnings = [];

/** Records what went over the wire for the run in progress. */
const recording = (Base) =>
  class extends Base {
    run(input) {
      current.input = input;
      return super.run(input).pipe(tap((event) => current.events.push(event)));
    }
  };

class ReplayAgent extends AbstractAgent {
  constructor(config, recorded) {
    super(config);
    this.recorded = recorded;
    this.turn = 0;
  }
  run() {
    return from(this.recorded[this.turn++]);
  }
}

/** verifyEvents on its own (after chunk expansion, as in runAgent) over one stream. */
async function verifierAlone(events) {
  try {
    await lastValueFrom(from(events).pipe(transformChunks(false), verifyEvents(false), toArray()));
    return null;
  } catch (error) {
    return error.message;
  }
}

async function runTurn(agent, parameters) {
  current = { input: null, events: [], error: null, warnings: [] };
  runs.push(current);
  try {
    const { newMessages } = await agent.runAgent(parameters);
    current.newMessages = newMessages;
  } catch (error) {
    current.error = `${error.name}: ${error.message}`;
  }
  current.verifyEvents = await verifierAlone(current.events);
  current.pendingInterrupts = agent.pendingInterrupts;
}

function unansweredToolMessages(messages, content) {
  const answered = new Set(messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
  return messages
    .flatMap((m) => m.toolCalls ?? [])
    .filter((call) => !answered.has(call.id))
    .map((call) => ({ id: `tool-result-${call.id}`, role: "tool", toolCallId: call.id, content }));
}

async function live(spec) {
  const agent = new (recording(HttpAgent))({ url: spec.url, threadId: spec.threadId, initialState: spec.state ?? {} });
  const common = { tools: spec.tools ?? [], context: [], forwardedProps: spec.forwardedProps ?? {} };
  for (const [index, turn] of spec.turns.entries()) {
    if (turn.message !== undefined) {
      agent.addMessage({ id: `user-${index}-${Date.now()}`, role: "user", content: turn.message });
    }
    if (turn.answerToolCalls !== undefined) {
      for (const message of unansweredToolMessages(agent.messages, turn.answerToolCalls)) agent.addMessage(message);
    }
    const parameters = { ...common };
    if (turn.resume !== undefined) {
      const answers = Object.fromEntries(
        agent.pendingInterrupts.map((interrupt) => [interrupt.id, { status: turn.resume, payload: turn.payload }]),
      );
      parameters.resume = buildResumeArray(agent.pendingInterrupts, answers);
    }
    await runTurn(agent, parameters);
  }
  return agent;
}

async function replay(spec) {
  const config = {
    threadId: spec.threadId ?? "replay-thread",
    initialState: spec.state ?? {},
    initialMessages: spec.messages ?? [],
  };
  const agent = new (recording(ReplayAgent))(config, spec.runs);
  for (const _ of spec.runs) {
    const pending = agent.pendingInterrupts;
    const answers = Object.fromEntries(pending.map((interrupt) => [interrupt.id, { status: "resolved" }]));
    await runTurn(agent, pending.length > 0 ? { resume: buildResumeArray(pending, answers) } : {});
  }
  return agent;
}

async function report(spec) {
  runs = [];
  current = null;
  orphanWarnings = [];
  const agent = spec.mode === "live" ? await live(spec) : await replay(spec);
  return {
    runs,
    state: agent.state,
    messages: agent.messages,
    warnings: orphanWarnings,
    ok: runs.every((run) => run.error === null),
  };
}

const reports = [];
for (const spec of Array.isArray(request) ? request : [request]) reports.push(await report(spec));
process.stdout.write(JSON.stringify(Array.isArray(request) ? reports : reports[0]));
