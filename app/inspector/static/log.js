// The event log: every event the client accepted, with its type, milliseconds since its run
// started and its raw JSON on demand, filterable by type. Virtualised: only the rows in view are
// in the DOM, so a 10,000-event run costs the page no more than a short one.

import { el, perFrame } from "./dom.js";

const ROW_HEIGHT = 24; // px, fixed so a row's position is its index times this
const OVERSCAN = 8;

export class EventLog {
  constructor(root) {
    this.filter = el("select", { id: "log-filter", onchange: () => this.refilter() }, el("option", { value: "" }, "all types"));
    this.count = el("span", { class: "muted", "aria-live": "off" });
    this.spacer = el("div", { class: "spacer" });
    this.viewport = el("div", { class: "log", tabindex: "0", "aria-label": "events", onscroll: () => this.render() }, this.spacer);
    this.raw = el("pre", { class: "raw", tabindex: "0", "aria-label": "selected event (JSON)" });
    root.replaceChildren(
      el("div", { class: "bar" }, el("label", { for: "log-filter" }, "Type"), this.filter, this.count),
      this.viewport,
      this.raw,
    );
    this.render = perFrame(() => this.draw());
    this.attach([]);
  }

  /** Shows `entries` (a session's growing array); `push` after each new one. */
  attach(entries) {
    this.entries = entries;
    this.types = new Set();
    this.filter.replaceChildren(el("option", { value: "" }, "all types"));
    for (const entry of entries) this.learn(entry.event.type);
    this.raw.textContent = "Select an event to see its JSON.";
    this.refilter();
  }

  learn(type) {
    if (this.types.has(type)) return;
    this.types.add(type);
    this.filter.append(el("option", { value: type }, type));
  }

  refilter() {
    const type = this.filter.value;
    this.shown = type ? this.entries.filter((entry) => entry.event.type === type) : [...this.entries];
    this.rows = new Map(); // index in `shown` -> its row, kept while in view so a click lands
    this.spacer.replaceChildren();
    this.follow = true;
    this.render();
  }

  push(entry) {
    this.learn(entry.event.type);
    if (!this.filter.value || entry.event.type === this.filter.value) this.shown.push(entry);
    this.render();
  }

  draw() {
    const { viewport, shown } = this;
    const atBottom = viewport.scrollTop + viewport.clientHeight >= viewport.scrollHeight - ROW_HEIGHT;
    this.spacer.style.height = `${shown.length * ROW_HEIGHT}px`;
    if (this.follow || atBottom) viewport.scrollTop = viewport.scrollHeight;
    this.follow = false;
    const first = Math.max(0, Math.floor(viewport.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(shown.length, Math.ceil((viewport.scrollTop + viewport.clientHeight) / ROW_HEIGHT) + OVERSCAN);
    for (const [index, row] of this.rows) {
      if (index < first || index >= last) {
        row.remove();
        this.rows.delete(index);
      }
    }
    for (let index = first; index < last; index++) {
      if (this.rows.has(index)) continue;
      const row = this.row(shown[index], index);
      this.rows.set(index, row);
      this.spacer.append(row);
    }
    this.count.textContent = `${shown.length} of ${this.entries.length} events`;
    this.count.dataset.total = this.entries.length;
  }

  row(entry, index) {
    const { event } = entry;
    return el(
      "button",
      {
        type: "button",
        class: "row",
        style: `top:${index * ROW_HEIGHT}px`,
        "data-type": event.type,
        onclick: () => {
          this.raw.textContent = JSON.stringify(event, null, 2);
        },
      },
      el("span", { class: "n" }, `#${entry.n}`),
      el("span", { class: "at" }, `run ${entry.run} +${entry.at} ms`),
      el("span", { class: "type" }, event.type),
      el("span", { class: "muted" }, summary(event)),
    );
  }
}

function summary(event) {
  if (event.delta !== undefined) return typeof event.delta === "string" ? event.delta : JSON.stringify(event.delta);
  return event.toolCallName ?? event.name ?? event.outcome?.type ?? event.message ?? "";
}
