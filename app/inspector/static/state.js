// The state panel: the client's state (after every STATE_SNAPSHOT and JSON Patch STATE_DELTA the
// published client applied), plus what predictive state shows while a tool argument streams.
// A PredictState CUSTOM event ([{state_key, tool, tool_argument}]) tells the client which
// argument of which tool fills which key; those keys are marked "predicted" until the run ends.

import { el, perFrame } from "./dom.js";

export class StatePanel {
  constructor(root) {
    this.pre = el("pre", { class: "state", tabindex: "0", "aria-label": "client state (JSON)" });
    this.note = el("p", { class: "muted" });
    root.replaceChildren(this.pre, this.note);
    this.render = perFrame(() => this.draw());
    this.reset();
  }

  reset() {
    this.state = {};
    this.rules = [];
    this.predicted = {};
    this.render();
  }

  show(state) {
    this.state = state;
    this.render();
  }

  event({ event }) {
    if (event.type === "CUSTOM" && event.name === "PredictState" && Array.isArray(event.value)) {
      this.rules = event.value;
    } else if (event.type === "RUN_STARTED" || event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") {
      this.predicted = {};
      this.render();
    }
  }

  /** `args`: the client's parse of a tool call's arguments so far (partial while they stream). */
  args({ toolCallName, args }) {
    for (const rule of this.rules) {
      const value = args?.[rule.tool_argument];
      if (rule.tool === toolCallName && value !== undefined) this.predicted[rule.state_key] = value;
    }
    this.render();
  }

  draw() {
    const keys = Object.keys(this.predicted);
    this.pre.textContent = JSON.stringify({ ...this.state, ...this.predicted }, null, 2);
    this.note.textContent = keys.length ? `predicted while the tool argument streams: ${keys.join(", ")}` : "";
    this.pre.dataset.predicted = keys.join(" ");
  }
}
