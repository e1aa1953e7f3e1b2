// "Same prompt, every runtime": one prompt to every mounted runtime at once, a column each, with
// each runtime's event-type sequence. A type that not every runtime emitted, or a different final
// outcome, is a difference: marked in the columns, listed above them, and linked to the matrix
// row that explains it (matrix.html#<feature>, the feature whose sample prompt was sent).

import { Conversation } from "./conversation.js";
import { el, perFrame } from "./dom.js";
import { Session } from "./session.js";

export class CompareView {
  constructor({ columns, differences }) {
    this.columnsRoot = columns;
    this.differencesRoot = differences;
    this.columns = [];
    this.render = perFrame(() => this.draw());
  }

  /** Sends `prompt` to every runtime on a new thread each; `feature` names the matrix row. */
  start(runtimes, prompt, { feature, olderClient }) {
    this.feature = feature;
    this.columns = runtimes.map((runtime) => this.column(new Session(runtime, { olderClient })));
    this.columnsRoot.replaceChildren(...this.columns.map((column) => column.root));
    this.render();
    return Promise.all(this.columns.map((column) => column.session.send(prompt)));
  }

  column(session) {
    const conversationRoot = el("div", { class: "conversation" });
    const sequence = el("ol", { class: "sequence", "aria-label": `event types from ${session.runtime.name}` });
    const conversation = new Conversation(conversationRoot, { onAnswer: (answers) => session.answer(answers) });
    const root = el(
      "section",
      { class: "column", "data-runtime": session.runtime.name, "aria-label": session.runtime.title },
      el("h3", {}, session.runtime.title, " ", el("code", {}, session.runtime.route)),
      el("p", { class: "muted" }, `${session.runtime.bridge_package} ${session.runtime.bridge_version}`),
      conversationRoot,
      el("h4", {}, "Event types"),
      sequence,
    );
    session.subscribe((kind, detail) => {
      if (kind === "user") conversation.user(detail);
      if (kind === "event") conversation.event(detail);
      if (kind === "tool") conversation.toolAnswered(detail);
      if (kind === "done") {
        if (detail.error) conversation.failure(detail.error);
        conversation.interrupts(detail.interrupts);
      }
      this.render();
    });
    return { session, root, sequence };
  }

  /** Per runtime: the set of event types it emitted, and how its last run ended. */
  differences() {
    const seen = this.columns.map(({ session }) => new Set(session.events.map(({ event }) => event.type)));
    const all = new Set(seen.flatMap((types) => [...types]));
    const differing = [...all].filter((type) => !seen.every((types) => types.has(type))).sort();
    const outcomes = this.columns.map(({ session }) => outcomeOf(session));
    const list = differing.map((type) => {
      const having = this.columns.filter((_, index) => seen[index].has(type)).map(({ session }) => session.runtime.name);
      return { key: type, text: `${type}: only from ${having.join(", ")}` };
    });
    if (new Set(outcomes).size > 1) {
      const text = this.columns.map(({ session }, index) => `${session.runtime.name} ${outcomes[index]}`).join(" · ");
      list.push({ key: "outcome", text: `final outcome differs: ${text}` });
    }
    return { differing: new Set(differing), list };
  }

  draw() {
    if (this.columns.length === 0) return;
    const { differing, list } = this.differences();
    const anchor = this.feature ? `#${this.feature}` : "";
    const busy = this.columns.some(({ session }) => session.busy);
    this.differencesRoot.replaceChildren(
      ...list.map(({ key, text }) =>
        el("li", { "data-difference": key }, text, " — ", el("a", { href: `inspector/matrix.html${anchor}` }, "why? (matrix)")),
      ),
    );
    if (list.length === 0) {
      this.differencesRoot.append(el("li", { class: "muted" }, busy ? "running…" : "none: every runtime emitted the same event types"));
    }
    for (const { session, sequence } of this.columns) {
      sequence.replaceChildren(
        ...collapse(session.events).map(({ type, count, run }) =>
          el(
            "li",
            { class: differing.has(type) ? "differs" : null, "data-type": type, title: differing.has(type) ? "not every runtime emitted this" : null },
            `${type}${count > 1 ? ` ×${count}` : ""}`,
            run > 1 ? el("span", { class: "muted" }, ` (run ${run})`) : null,
          ),
        ),
      );
    }
  }
}

function outcomeOf(session) {
  const last = session.runs.at(-1);
  if (!last?.done) return "running";
  return last.error ? "failed" : last.outcome ?? "no outcome";
}

/** Consecutive events of one type in one run become one entry with a count. */
function collapse(entries) {
  const out = [];
  for (const { event, run } of entries) {
    const previous = out.at(-1);
    if (previous && previous.type === event.type && previous.run === run) previous.count++;
    else out.push({ type: event.type, count: 1, run });
  }
  return out;
}
