// @ag-ui/mastra's MastraAgent on a plain loopback HTTP server, owned by the Python app (runtimes/mastra).
//
// POST <AGUI_SIDECAR_ROUTE>: a RunAgentInput in, MastraAgent.run's events out as Server-Sent Events,
// nothing else: the bridge is used as published. Around it, the server adds what the bridge
// (1.1.2) cannot do:
//
// * tool calls as they stream: the bridge shows a backend tool call only once Mastra has it whole
//   (at its next chunk), so its arguments never stream; each backend call's streaming chunks go out
//   as CUSTOM `mastra:tool-call` events, which the app shows as the call (runtimes/mastra/events.py).
// * the specialist's stream: the bridge drops Mastra's `tool-output` chunks (`case "tool-output":
//   break`). The agent's fullStream is teed before the bridge reads it, and each chunk a client can
//   render goes out first as a CUSTOM event `mastra:tool-output` carrying the parent tool call (id,
//   name, arguments). The Python dialect (emitters/mastra.py) turns them into SUBAGENT_* and removes
//   them from the wire.
// * cancellation: the bridge's Observable has no teardown, so a client that leaves would not stop
//   the run. Each request's Mastra calls get an AbortSignal that fires when the request closes.
// * the run's budget: each model request goes out first as a CUSTOM `mastra:model-call` event, which
//   the app counts against AGUI_MAX_MODEL_CALLS (runtimes/mastra/bridge.py) and removes from the wire.
// * failures: a model failure reaches the bridge as an `error` chunk whose Error it flattens to a
//   string; the original is kept and described (name, status, cause code) on the RUN_ERROR for the
//   app to name. A specialist whose model fails fails the run (Mastra would hand the error to the
//   parent model as a tool result). A failure of Mastra's storage (the engine, with shared state)
//   is described the same way, with its `MASTRA_STORAGE_…` code, for the app to tell it apart.
//
// Where runs wait: a run suspended for an approval waits in Mastra's storage until it is resumed.
// That is Mastra's in-memory store, or, when the app's state is shared (AGUI_SIDECAR_STATE_URL, the
// app's AGUI_STATE_URL), Mastra's own Redis storage adapter (@mastra/redis) on the same engine, so
// the sidecar of any replica resumes a run that another one suspended.
//
// Bounded: the store's records are indexed per thread (ThreadRuns, beside the records: in this
// process, or in the engine). When a request ends, its thread's runs that no longer wait for an
// answer are dropped; a suspended one stays until it is resumed or the app forgets its thread
// (POST <route>/forget {threadId}: the app's approval ledger evicted or refused it, on any replica,
// app/approvals.py). So the sidecar never drops a run the ledger keeps parked, and holds no more
// suspended threads than the ledger lets wait. GET <route>/threads lists the threads it holds runs
// of (for operators and tests).
//
// It prints {"listening": <port>} once it accepts requests, and exits when its stdin closes (the app
// that owns it is gone), so it never outlives the app.

import http from "node:http";
import { MastraAgent } from "@ag-ui/mastra";
import { ErrorCategory, ErrorDomain, MastraError } from "@mastra/core/error";
import { InMemoryStore, createStorageErrorId } from "@mastra/core/storage";
import { buildMastra, runScope } from "./agents.mjs";

const FORWARDED = "mastra:tool-output";
const STREAMED_CALL = "mastra:tool-call";
const MODEL_CALL = "mastra:model-call";
const CALL_CHUNKS = new Set(["tool-call-input-streaming-start", "tool-call-delta", "tool-call"]);
const RENDERED = new Set([
  "text-delta", "tool-call-input-streaming-start", "tool-call-delta", "tool-call",
  "tool-result", "tool-error", "tool-call-suspended", "error",
]);

const env = process.env;
const settings = {
  baseUrl: env.AGUI_SIDECAR_MODEL_URL,
  apiKey: env.AGUI_SIDECAR_MODEL_KEY || "not-set",
  modelId: env.AGUI_MODEL_ID || "scripted",
  timeoutMs: Number(env.AGUI_MODEL_TIMEOUT_S || 60) * 1000,
  // Mastra stops an agent after 5 steps by default, quietly; the app's budget is the limit instead.
  maxSteps: Number(env.AGUI_MAX_MODEL_CALLS || 20) + 1,
  toolsUrl: env.AGUI_SIDECAR_TOOLS_URL,
  toolsKey: env.AGUI_SIDECAR_TOOLS_KEY,
  parentInstructions: env.AGUI_SIDECAR_PARENT_INSTRUCTIONS,
  specialistInstructions: env.AGUI_SIDECAR_SPECIALIST_INSTRUCTIONS,
};
const route = env.AGUI_SIDECAR_ROUTE || "/agent";
/** The thread -> stored runs index of this process (beside Mastra's in-memory store). */
class LocalIndex {
  constructor() {
    this.runs = new Map(); // thread -> Set of members
  }
  async add(thread, member) {
    this.runs.set(thread, (this.runs.get(thread) ?? new Set()).add(member));
  }
  async members(thread) {
    return [...(this.runs.get(thread) ?? [])];
  }
  async remove(thread, member) {
    this.runs.get(thread)?.delete(member);
    if (this.runs.get(thread)?.size === 0) this.runs.delete(thread);
  }
  async drop(thread) {
    this.runs.delete(thread);
  }
  async threads() {
    return [...this.runs.keys()];
  }
}

/** The same index in the engine, beside the records (@mastra/redis's client): a Redis set per thread.
 * Its failures are Mastra storage errors, as @mastra/redis's own are (`MASTRA_STORAGE_…` codes: the
 * app ends a run that met one with STATE_UNAVAILABLE, runtimes/mastra/errors.py). */
class EngineIndex {
  static PREFIX = "agui:mastra:runs:";
  static TTL_S = 30 * 24 * 3600; // as long as the app's gate keeps an open approval (runtimes/interrupts.py)
  constructor(client) {
    this.client = client;
  }
  async add(thread, member) {
    const key = EngineIndex.PREFIX + thread;
    await engine("ADD", () => this.client.multi().sAdd(key, member).expire(key, EngineIndex.TTL_S).exec());
  }
  async members(thread) {
    return engine("MEMBERS", () => this.client.sMembers(EngineIndex.PREFIX + thread));
  }
  async remove(thread, member) {
    await engine("REMOVE", () => this.client.sRem(EngineIndex.PREFIX + thread, member));
  }
  async drop(thread) {
    await engine("DROP", () => this.client.del(EngineIndex.PREFIX + thread));
  }
  async threads() {
    const found = [];
    let cursor = "0";
    do {
      const page = await engine("SCAN", () => this.client.scan(cursor, { MATCH: `${EngineIndex.PREFIX}*`, COUNT: 1000 }));
      cursor = String(page.cursor);
      found.push(...page.keys.map((key) => key.slice(EngineIndex.PREFIX.length)));
    } while (cursor !== "0");
    return found;
  }
}

async function engine(operation, call) {
  try {
    return await call();
  } catch (error) {
    throw new MastraError(
      {
        id: createStorageErrorId("REDIS", `THREAD_INDEX_${operation}`, "FAILED"),
        domain: ErrorDomain.STORAGE,
        category: ErrorCategory.THIRD_PARTY,
      },
      error,
    );
  }
}

/** Which of the store's workflow runs belong to which thread (a run is stored while the request that
 * serves its thread runs: runScope), and dropping them. One request per thread at a time (the app's
 * thread lease), so a thread's records are never settled while another request of it writes them. */
class ThreadRuns {
  constructor(store, index) {
    this.store = store;
    this.index = index;
    const persist = store.persistWorkflowSnapshot.bind(store);
    store.persistWorkflowSnapshot = async (args) => {
      const thread = runScope.getStore()?.thread;
      if (thread !== undefined) await index.add(thread, JSON.stringify([args.workflowName, args.runId]));
      return persist(args);
    };
  }

  /** After a request: drop the thread's runs that no longer wait for an answer. */
  async settle(thread) {
    for (const member of await this.index.members(thread)) {
      const [workflowName, runId] = JSON.parse(member);
      const snapshot = await this.store.loadWorkflowSnapshot({ workflowName, runId });
      if (snapshot?.status === "suspended") continue;
      await this.store.deleteWorkflowRunById({ workflowName, runId });
      await this.index.remove(thread, member);
    }
  }

  /** Drop every run of the thread, suspended ones included (the app no longer holds its approvals). */
  async forget(thread) {
    for (const member of await this.index.members(thread)) {
      const [workflowName, runId] = JSON.parse(member);
      await this.store.deleteWorkflowRunById({ workflowName, runId });
    }
    await this.index.drop(thread);
  }
}

/** Mastra's storage and the index beside it: the engine's when the app's state is shared. */
async function storage(url) {
  if (!url) return { store: new InMemoryStore(), index: new LocalIndex() };
  const { RedisStore } = await import("@mastra/redis");
  const store = new RedisStore({ id: "agui-mastra", connectionString: url });
  // The engine may restart: the client reconnects (commands wait meanwhile); an unhandled "error"
  // event would end the process.
  store.getClient().on("error", (error) => console.error("engine:", error.message));
  await store.init();
  // @mastra/redis 1.4.6 keys a snapshot persisted with a resourceId (@ag-ui/mastra 1.1.2 passes the
  // thread) under that id too, but loads and deletes it by workflow and run alone: such a run is
  // never found again, so no approval could be resumed. The resourceId is left out on the way in,
  // so every read finds the key. Drop this when @mastra/redis loads what it persists.
  const workflows = await store.getStore("workflows");
  const persist = workflows.persistWorkflowSnapshot.bind(workflows);
  workflows.persistWorkflowSnapshot = ({ resourceId: _ignored, ...args }) => persist(args);
  return { store, index: new EngineIndex(store.getClient()) };
}

const { store, index } = await storage(env.AGUI_SIDECAR_STATE_URL);
const mastra = buildMastra(settings, store);
const workflows = await mastra.getStorage().getStore("workflows");
const threadRuns = new ThreadRuns(workflows, index);
endRunsOnStorageFailure(workflows);

/** Every method of Mastra's workflow storage (the one store an agent's run uses), so that a failure
 * ends the run that met it, at once, with that failure: @mastra/core 1.71.0 does not always end a
 * run's stream when its storage fails (a snapshot that cannot be written left the request open with
 * no event and no end: tests/test_mastra_shared.py). */
function endRunsOnStorageFailure(store) {
  const methods = new Map();
  for (let level = store; level && level !== Object.prototype; level = Object.getPrototypeOf(level)) {
    for (const [name, { value }] of Object.entries(Object.getOwnPropertyDescriptors(level))) {
      if (name !== "constructor" && typeof value === "function" && !methods.has(name)) methods.set(name, value);
    }
  }
  const failed = (error) => {
    runScope.getStore()?.storageFailed(error);
    throw error;
  };
  for (const [name, method] of methods) {
    store[name] = (...args) => {
      let result;
      try {
        result = method.apply(store, args);
      } catch (error) {
        failed(error);
      }
      return typeof result?.then === "function" ? result.then(undefined, failed) : result;
    };
  }
}

/** An error and its causes, as plain data the app can name (an Error is not JSON). A MastraError's
 * code is its id (as its toJSON has it). */
function described(error) {
  const chain = [];
  for (let current = error; current && chain.length < 8; current = current.cause) {
    if (typeof current !== "object") {
      chain.push({ name: "Error", message: String(current) });
      break;
    }
    const code = current.code ?? (current instanceof MastraError ? current.id : undefined);
    chain.push({
      name: current.name,
      message: String(current.message ?? ""),
      ...(current.statusCode !== undefined ? { statusCode: current.statusCode } : {}),
      ...(code !== undefined ? { code: String(code) } : {}),
    });
  }
  return chain;
}

function plain(chunk) {
  return chunk.type === "error" ? { ...chunk, payload: { error: described(chunk.payload?.error) } } : chunk;
}

/** One request: its response, its abort signal, and how it ends. */
class Exchange {
  constructor(response, input) {
    this.response = response;
    this.thread = String(input.threadId ?? "");
    this.clientTools = new Set((input.tools ?? []).map((tool) => tool.name));
    this.abort = new AbortController();
    this.modelError = undefined;
    this.ended = false;
    response.on("close", () => this.abort.abort(new DOMException("the client left", "AbortError")));
  }

  send(event) {
    if (!this.ended) this.response.write(`data: ${JSON.stringify(event)}\n\n`);
  }

  fail(error) {
    this.send({ type: "RUN_ERROR", message: String(error?.message ?? error), code: error?.name ?? "Error", rawEvent: { errors: described(error) } });
    this.finish();
  }

  /** The thread's runs settled before the response ends: the app reads a run to its end before it
   * lets the thread's next request in, so that request never meets a settle of this one. */
  async finish() {
    if (this.ended) return;
    this.ended = true;
    await threadRuns.settle(this.thread).catch((error) => console.error("settle:", error));
    this.response.end();
    this.abort.abort();
  }

  /** The agent's output with its fullStream teed: specialist chunks forwarded, errors kept. */
  tee(output) {
    const exchange = this;
    const calls = new Map();
    let messageId; // the assistant message Mastra's current step writes (what the bridge calls it too)
    async function* chunks() {
      for await (const chunk of output.fullStream) {
        if (chunk.type === "start" || chunk.type === "step-start") messageId = chunk.payload?.messageId ?? messageId;
        if (chunk.type === "tool-call") calls.set(chunk.payload.toolCallId, chunk.payload);
        if (CALL_CHUNKS.has(chunk.type) && !exchange.clientTools.has(chunk.payload?.toolName)) {
          const { toolCallId, toolName, argsTextDelta, args } = chunk.payload;
          exchange.send({ type: "CUSTOM", name: STREAMED_CALL, value: { type: chunk.type, toolCallId, toolName, argsTextDelta, args, messageId } });
        }
        if (chunk.type === "error") exchange.modelError ??= chunk.payload?.error;
        if (chunk.type === "tool-output" && RENDERED.has(chunk.payload?.output?.type)) {
          const { toolCallId, toolName, output: inner } = chunk.payload;
          const call = calls.get(toolCallId);
          exchange.send({ type: "CUSTOM", name: FORWARDED, value: { toolCallId, toolName, args: call?.args, chunk: plain(inner) } });
          if (inner.type === "error") return exchange.fail(inner.payload?.error);
        }
        yield chunk;
      }
    }
    return new Proxy(output, {
      get: (target, key) => (key === "fullStream" ? chunks() : bound(target, key)),
    });
  }

  /** The agent as the bridge sees it: every run gets this request's abort signal and the tee, and no
   * `memory` target. The bridge names the thread there, and for nothing but Mastra's own one-run-per-
   * thread reservation (these agents have no Memory; a snapshot's resourceId is dropped: storage()),
   * which the app's thread lease already is. @mastra/core 1.71.0 never releases that reservation when
   * a run's storage fails as it starts, so every later run of the thread in this process waited
   * forever (tests/test_mastra_shared.py). */
  agent(agent) {
    const withSignal = ({ memory: _thread, ...options }) => ({
      ...options,
      abortSignal: this.abort.signal,
      maxSteps: settings.maxSteps,
    });
    const wrap = (method) => async (first, options) => this.tee(await agent[method](first, withSignal(options)));
    return new Proxy(agent, {
      get: (target, key) => (key === "stream" || key === "resumeStream" ? wrap(key) : bound(target, key)),
    });
  }
}

function bound(target, key) {
  const value = Reflect.get(target, key, target);
  return typeof value === "function" ? value.bind(target) : value;
}

async function readJson(request) {
  let body = "";
  for await (const piece of request) body += piece;
  return JSON.parse(body);
}

async function serve(request, response) {
  if (request.method === "GET" && request.url === `${route}/threads`) {
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ threads: await index.threads() }));
    return;
  }
  if (request.method !== "POST" || (request.url !== route && request.url !== `${route}/forget`)) {
    response.writeHead(404).end();
    return;
  }
  let input;
  try {
    input = await readJson(request);
  } catch {
    response.writeHead(400, { "content-type": "application/json" }).end('{"detail": "not JSON"}');
    return;
  }
  if (request.url !== route) {
    await threadRuns.forget(String(input.threadId ?? ""));
    response.writeHead(204).end();
    return;
  }
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const exchange = new Exchange(response, input);
  const bridge = new MastraAgent({ agentId: "assistant", agent: exchange.agent(mastra.getAgent("assistant")) });
  const modelCall = () => exchange.send({ type: "CUSTOM", name: MODEL_CALL, value: {} });
  const storageFailed = (error) => exchange.fail(error);
  runScope.run({ thread: exchange.thread, modelCall, storageFailed }, () =>
    bridge.run(input).subscribe({
      next: (event) => exchange.send(event),
      error: (error) => exchange.fail(exchange.modelError ?? error),
      complete: () => exchange.finish(),
    }),
  );
}

const server = http.createServer((request, response) => {
  serve(request, response).catch((error) => {
    if (!response.headersSent) response.writeHead(500).end(String(error));
    else response.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(env.AGUI_SIDECAR_PORT || 0), "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ listening: server.address().port })}\n`);
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
process.on("SIGTERM", () => process.exit(0));
