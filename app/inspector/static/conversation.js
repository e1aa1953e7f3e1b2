// The conversation as a client renders the stream: text as it arrives, tool-call cards with their
// arguments streaming and their results, subagent cards nested under the tool call that started
// them (with their own text, tool calls and status), and approval cards that answer every open
// interrupt of a run together with the protocol's `resume`.

import { el } from "./dom.js";

// A long reply is laid out in blocks of about this many characters, cut after whitespace: new text
// then re-lays out only the last block, so a 10,000-chunk reply does not cost more per chunk as it grows.
const PART_CHARS = 2000;

const DECISIONS = [
  ["Approve", "approved", { status: "resolved", payload: { approved: true } }],
  ["Reject", "rejected", { status: "resolved", payload: { approved: false } }],
  ["Cancel", "cancelled", { status: "cancelled" }],
];

export class Conversation {
  /** `onAnswer(answers)` receives {interruptId: decision} once every open interrupt has one. */
  constructor(root, { onAnswer }) {
    this.root = root;
    this.onAnswer = onAnswer;
    this.clear();
  }

  clear() {
    this.root.replaceChildren();
    this.texts = new Map(); // messageId -> the text node its next delta goes to
    this.tools = new Map(); // toolCallId -> card parts
    this.subagents = new Map(); // subagentRunId -> card parts
  }

  user(text) {
    this.root.append(el("div", { class: "message user" }, el("span", { class: "who" }, "you"), text));
  }

  /** Where an event belongs: inside its subagent's card when it carries a subagentRunId. */
  container(event) {
    return this.subagents.get(event.subagentRunId)?.body ?? this.root;
  }

  event({ event }) {
    const handler = this[event.type];
    if (handler) handler.call(this, event);
  }

  TEXT_MESSAGE_START(event) {
    const who = event.subagentRunId ? this.subagents.get(event.subagentRunId)?.name ?? "subagent" : "assistant";
    const bubble = el("div", { class: "message assistant", "data-message-id": event.messageId, "data-empty": true }, el("span", { class: "who" }, who));
    this.texts.set(event.messageId, this.part(bubble));
    this.container(event).append(bubble);
  }

  part(bubble) {
    const text = document.createTextNode("");
    bubble.append(el("span", { class: "part" }, text));
    return text;
  }

  TEXT_MESSAGE_CONTENT(event) {
    let text = this.texts.get(event.messageId);
    if (!text) return;
    const bubble = text.parentNode.parentNode;
    if (text.length >= PART_CHARS && /\s$/.test(text.data)) {
      text = this.part(bubble);
      this.texts.set(event.messageId, text);
    }
    text.appendData(event.delta);
    delete bubble.dataset.empty; // a message opened and closed with no text stays hidden
  }

  TOOL_CALL_START(event) {
    const args = document.createTextNode("");
    const result = el("div", { class: "result muted" }, "running…");
    const nested = el("div", { class: "nested" });
    const card = el(
      "div",
      { class: "card tool", "data-tool-call-id": event.toolCallId },
      el("div", { class: "title" }, "tool call ", el("code", {}, event.toolCallName)),
      el("pre", { class: "args", "aria-label": "arguments" }, args),
      result,
      nested,
    );
    this.tools.set(event.toolCallId, { card, args, result, nested, name: event.toolCallName });
    this.container(event).append(card);
  }

  TOOL_CALL_ARGS(event) {
    this.tools.get(event.toolCallId)?.args.appendData(event.delta);
  }

  TOOL_CALL_END(event) {
    const tool = this.tools.get(event.toolCallId);
    if (!tool) return;
    try {
      tool.args.data = JSON.stringify(JSON.parse(tool.args.data), null, 2);
    } catch {
      // arguments that are not JSON stay as they streamed
    }
    if (tool.result.textContent === "running…") tool.result.textContent = "waiting for its result…";
  }

  TOOL_CALL_RESULT(event) {
    this.result(event.toolCallId, event.content);
  }

  /** A tool call's result, from a TOOL_CALL_RESULT, a snapshot's tool message or the page itself. */
  result(toolCallId, content) {
    const tool = this.tools.get(toolCallId);
    if (!tool) return;
    tool.result.className = "result";
    tool.result.replaceChildren(el("span", { class: "who" }, "result"), typeof content === "string" ? content : JSON.stringify(content));
  }

  MESSAGES_SNAPSHOT(event) {
    // Some bridges send a result only in the snapshot: fill in the cards still without one.
    for (const message of event.messages) {
      const tool = message.role === "tool" && this.tools.get(message.toolCallId);
      if (tool && tool.result.classList.contains("muted")) this.result(message.toolCallId, message.content);
    }
  }

  SUBAGENT_STARTED(event) {
    const known = this.subagents.get(event.subagentRunId);
    if (known) return this.status(known, "running"); // resumed after an approval: the same run continues
    const status = el("span", { class: "status" });
    const body = el("div", { class: "body" });
    const card = el(
      "div",
      { class: "card subagent", "data-subagent-run-id": event.subagentRunId },
      el("div", { class: "title" }, "subagent ", el("code", {}, event.name), " ", status),
      body,
    );
    const parts = { card, status, body, name: event.name };
    this.subagents.set(event.subagentRunId, parts);
    (this.tools.get(event.parentToolCallId)?.nested ?? this.root).append(card);
    this.status(parts, "running");
  }

  SUBAGENT_FINISHED(event) {
    const parts = this.subagents.get(event.subagentRunId);
    if (parts) this.status(parts, event.outcome?.type === "suspended" ? "suspended" : "finished");
  }

  SUBAGENT_ERROR(event) {
    const parts = this.subagents.get(event.subagentRunId);
    if (!parts) return;
    this.status(parts, "error");
    parts.body.append(el("div", { class: "error" }, `${event.code ?? "error"}: ${event.message}`));
  }

  status(parts, status) {
    parts.card.dataset.status = status;
    parts.status.textContent = status;
  }

  RUN_ERROR(event) {
    this.root.append(el("div", { class: "error", role: "alert" }, `RUN_ERROR ${event.code ?? ""}: ${event.message}`));
  }

  /** A run that failed before or outside the stream (HTTP error, the client's verifier). */
  failure(error) {
    const hint = "Open interrupts stay open on this thread; New thread starts afresh.";
    this.root.append(el("div", { class: "error", role: "alert" }, `The run failed: ${error.message ?? error}. ${hint}`));
  }

  toolAnswered({ toolCallId, content }) {
    this.result(toolCallId, content);
  }

  /** Approval cards for a run's interrupts; the answers go out together once each has one. */
  interrupts(interrupts) {
    if (interrupts.length === 0) return;
    const decisions = {};
    const choices = [];
    for (const interrupt of interrupts) {
      const tool = this.tools.get(interrupt.toolCallId);
      const choice = el("span", { class: "muted" });
      choices.push(choice);
      const buttons = DECISIONS.map(([label, done, decision]) =>
        el("button", {
          type: "button",
          "aria-label": `${label} ${tool?.name ?? interrupt.id}`,
          onclick: () => {
            decisions[interrupt.id] = decision;
            for (const button of buttons) button.disabled = true;
            card.dataset.decision = done;
            const waiting = Object.keys(decisions).length < interrupts.length;
            for (const each of choices) each.textContent = each.textContent.replace(/ — .*/, "");
            choice.textContent = waiting ? `${done} — answer the other approvals to send them together` : done;
            if (!waiting) this.onAnswer(decisions);
          },
        }, label),
      );
      const card = el(
        "div",
        { class: "card approval", role: "group", "aria-label": "approval", "data-interrupt-id": interrupt.id },
        el("div", { class: "title" }, "approval needed"),
        el("p", {}, interrupt.message ?? interrupt.reason ?? "The agent asks for your approval."),
        tool ? el("p", { class: "muted" }, "for tool call ", el("code", {}, tool.name)) : null,
        el("div", { class: "actions" }, ...buttons, choice),
      );
      (this.subagents.get(interrupt.subagentRunId)?.body ?? this.tools.get(interrupt.toolCallId)?.nested ?? this.root).append(card);
    }
  }
}
