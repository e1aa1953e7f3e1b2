// The Mastra runtime of POST /mastra/agent: the parent agent, its specialist and their tools.
//
// Everything here is plain Mastra. What the offline script decides (triggers, tool names, replies)
// and what the tools compute come from the Python app that owns this process, over loopback: the
// model is any OpenAI-compatible Chat Completions endpoint (the app's scripted one offline), and
// each tool's result is computed by the app (`POST <tools url>/<name>`), so there is no second copy
// of the script here. `research_specialist` is Mastra's agent-as-tool pattern under the script's
// name and schema: it streams the specialist and writes every chunk of it to the tool's writer (the
// parent stream carries them as `tool-output` chunks), and suspends with the specialist when one
// of its tools suspends, as `Agent.listAgentTools` does for the `agents` option.

import { AsyncLocalStorage } from "node:async_hooks";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { createTool } from "@mastra/core/tools";
import { z } from "zod";

/** The run being served (set by the server around each run): `{thread, modelCall, storageFailed}`. Every model
 * request of the run carries the thread as `x-agui-thread`, so the app counts the script's chunks as
 * that run's, and is announced by `modelCall()` first (the app counts it against the run's budget). */
export const runScope = new AsyncLocalStorage();

/** fetch with the model's silence limit: no answer, or no chunk for `timeoutMs`, aborts the call. */
export function silenceLimitedFetch(timeoutMs) {
  return async (url, init = {}) => {
    const run = runScope.getStore();
    if (run) {
      run.modelCall();
      init = { ...init, headers: { ...Object.fromEntries(new Headers(init.headers)), "x-agui-thread": run.thread } };
    }
    const controller = new AbortController();
    const silent = () => controller.abort(new DOMException(`no answer for ${timeoutMs} ms`, "TimeoutError"));
    const outer = init.signal;
    if (outer?.aborted) controller.abort(outer.reason);
    outer?.addEventListener("abort", () => controller.abort(outer.reason), { once: true });
    let timer = setTimeout(silent, timeoutMs);
    let response;
    try {
      response = await fetch(url, { ...init, signal: controller.signal });
    } catch (error) {
      clearTimeout(timer);
      throw error;
    }
    if (!response.body) {
      clearTimeout(timer);
      return response;
    }
    const reader = response.body.getReader();
    const body = new ReadableStream({
      async pull(sink) {
        clearTimeout(timer);
        timer = setTimeout(silent, timeoutMs);
        try {
          const { done, value } = await reader.read();
          if (done) {
            clearTimeout(timer);
            sink.close();
          } else {
            sink.enqueue(value);
          }
        } catch (error) {
          clearTimeout(timer);
          sink.error(error);
        }
      },
      cancel(reason) {
        clearTimeout(timer);
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

function computedBy(settings, name) {
  return async (args) => {
    const response = await fetch(`${settings.toolsUrl}/${name}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${settings.toolsKey}` },
      body: JSON.stringify(args),
    });
    if (!response.ok) throw new Error(`tool ${name}: HTTP ${response.status}`);
    return response.json();
  };
}

function deleteFile(settings) {
  const run = computedBy(settings, "delete_file");
  return createTool({
    id: "delete_file",
    description: "Delete a file. The user must approve every call before it runs.",
    inputSchema: z.object({ path: z.string().describe("The path of the file to delete.") }),
    // No suspendSchema: a tool with one makes Mastra run a step's tool calls one at a time and suspend
    // at the first, so two deletions would be asked one after the other instead of at once.
    execute: async ({ path }, context) => {
      const answer = context.agent.resumeData;
      // The call's own id goes with the request, so the app can name it in the interrupt even when a
      // specialist asks (the parent's interrupt names the delegating call).
      if (answer === undefined) return context.agent.suspend({ path, toolCallId: context.agent.toolCallId });
      return answer.approved ? run({ path }) : `Not deleted: the request to delete ${path} was not approved.`;
    },
  });
}

function backendTools(settings) {
  return {
    get_weather: createTool({
      id: "get_weather",
      description: "Get the current weather for a city.",
      inputSchema: z.object({ city: z.string().describe('The city to report on, e.g. "Tokyo".') }),
      execute: computedBy(settings, "get_weather"),
    }),
    update_recipe: createTool({
      id: "update_recipe",
      description: "Put a recipe into the shared state (key `recipe`), keeping every other state key.",
      inputSchema: z.object({ recipe: z.record(z.string(), z.any()).describe("The recipe: title, ingredients, steps.") }),
      execute: computedBy(settings, "update_recipe"),
    }),
    write_document: createTool({
      id: "write_document",
      description: "Write a document into the shared state (key `document`); it fills in as it streams.",
      inputSchema: z.object({ document: z.string().describe("The full text of the document.") }),
      execute: computedBy(settings, "write_document"),
    }),
  };
}

function researchSpecialist(specialist, maxSteps) {
  return createTool({
    id: "research_specialist",
    description: "Delegate a research task to the research specialist agent; it answers with its finding.",
    inputSchema: z.object({ task: z.string().describe("What to research.") }),
    execute: async ({ task }, context) => {
      const { resumeData, suspendPayload, suspend } = context.agent;
      const options = { abortSignal: context.abortSignal, requestContext: context.requestContext, maxSteps };
      // Mastra resolves a suspended specialist's run only for its own `agent-<name>` tools, so this
      // tool keeps the specialist's run id in its suspension payload and resumes that run.
      const stream =
        resumeData !== undefined && suspendPayload?.specialistRunId
          ? await specialist.resumeStream(resumeData, { ...options, runId: suspendPayload.specialistRunId })
          : await specialist.stream([{ role: "user", content: task }], options);
      let suspended;
      for await (const chunk of stream.fullStream) {
        await context.writer?.write(chunk);
        if (chunk.type === "tool-call-suspended") suspended = chunk.payload;
      }
      if (stream.error) throw stream.error;
      if (suspended) {
        return suspend({ ...suspended.suspendPayload, specialistRunId: stream.runId }, { resumeSchema: suspended.resumeSchema });
      }
      return stream.text;
    },
  });
}

/** The Mastra instance: `assistant` (the parent) and `research_specialist`, on `storage` (suspended
 * runs wait there for their resume: the sidecar's memory, or the app's shared engine). */
export function buildMastra(settings, storage) {
  const provider = createOpenAICompatible({
    name: "agui",
    baseURL: settings.baseUrl,
    apiKey: settings.apiKey,
    includeUsage: true,
    fetch: silenceLimitedFetch(settings.timeoutMs),
  });
  const model = provider.chatModel(settings.modelId);
  const specialist = new Agent({
    id: "research_specialist",
    name: "research_specialist",
    instructions: settings.specialistInstructions,
    model,
    tools: { lookup_fact: lookupFact(settings), delete_file: deleteFile(settings) },
  });
  const assistant = new Agent({
    id: "assistant",
    name: "assistant",
    instructions: settings.parentInstructions,
    model,
    tools: { ...backendTools(settings), delete_file: deleteFile(settings), research_specialist: researchSpecialist(specialist, settings.maxSteps) },
  });
  return new Mastra({ agents: { assistant, research_specialist: specialist }, storage, logger: false });
}

function lookupFact(settings) {
  return createTool({
    id: "lookup_fact",
    description: "Look up one fact about a topic.",
    inputSchema: z.object({ topic: z.string().describe("What to look up.") }),
    execute: computedBy(settings, "lookup_fact"),
  });
}
