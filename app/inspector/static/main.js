// Wires the panels together. Everything about the server comes from its capabilities document
// (`GET /` as JSON): a runtime mounted later appears here with no change to the page.

import { Unauthorized, capabilities, lastRequestAsCurl, onRequest, saveToken } from "./api.js";
import { CompareView } from "./compare.js";
import { Conversation } from "./conversation.js";
import { el } from "./dom.js";
import { EventLog } from "./log.js";
import { Session } from "./session.js";
import { StatePanel } from "./state.js";

const $ = (id) => document.getElementById(id);
const page = { runtimes: [], session: null, compare: null };

const conversation = new Conversation($("conversation"), { onAnswer: (answers) => page.session.answer(answers) });
const statePanel = new StatePanel($("state"));
const log = new EventLog($("log"));
const compare = new CompareView({ columns: $("columns"), differences: $("differences") });
page.compare = compare;

/** A new thread on the picked runtime; the panels follow its session. */
function newSession() {
  const runtime = page.runtimes.find((candidate) => candidate.route === $("runtime").value);
  const session = new Session(runtime, { olderClient: $("older-client").checked });
  page.session = session;
  conversation.clear();
  statePanel.reset();
  log.attach(session.events);
  busy(false);
  $("thread-id").textContent = session.agent.threadId;
  $("bridge").textContent = `${runtime.title} · ${runtime.bridge_package} ${runtime.bridge_version}`;
  session.subscribe((kind, detail) => {
    if (session !== page.session) return;
    if (kind === "user") conversation.user(detail);
    if (kind === "event") {
      conversation.event(detail);
      statePanel.event(detail);
      log.push(detail);
    }
    if (kind === "args") statePanel.args(detail);
    if (kind === "state") statePanel.show(detail);
    if (kind === "tool") conversation.toolAnswered(detail);
    if (kind === "run") busy(true);
    if (kind === "done") {
      if (detail.error) conversation.failure(detail.error);
      conversation.interrupts(detail.interrupts);
      busy(session.busy);
    }
  });
}

/** While a run streams, the prompts wait (a thread takes one run at a time). */
function busy(running) {
  for (const button of document.querySelectorAll("#chips button, #composer button")) button.disabled = running;
  $("conversation").setAttribute("aria-busy", String(running));
}

function chips(root, onPick) {
  const features = page.runtimes[0]?.features ?? [];
  root.replaceChildren(
    ...features.map((feature) =>
      el("button", { type: "button", class: "chip", title: feature.description, "data-feature": feature.name, onclick: () => onPick(feature) }, feature.sample_prompt),
    ),
  );
}

function send(text) {
  if (!text.trim() || page.session.busy) return;
  page.session.send(text);
}

function sendToEveryRuntime(text, feature) {
  if (!text.trim()) return;
  compare.start(page.runtimes, text, { feature, olderClient: $("older-client").checked });
}

function showView() {
  const view = location.hash === "#compare" ? "compare" : "inspect";
  $("view-inspect").hidden = view !== "inspect";
  $("view-compare").hidden = view !== "compare";
  $("tab-inspect").toggleAttribute("aria-current", view === "inspect");
  $("tab-compare").toggleAttribute("aria-current", view === "compare");
}

async function boot() {
  $("auth").hidden = true;
  let listing;
  try {
    listing = await capabilities();
  } catch (error) {
    if (!(error instanceof Unauthorized)) throw error;
    $("auth").hidden = false;
    $("token").focus();
    return;
  }
  page.runtimes = listing.runtimes;
  $("runtime").replaceChildren(
    ...page.runtimes.map((runtime) => el("option", { value: runtime.route }, `${runtime.title} — ${runtime.route}`)),
  );
  chips($("chips"), (feature) => send(feature.sample_prompt));
  chips($("compare-chips"), (feature) => sendToEveryRuntime(feature.sample_prompt, feature.name));
  newSession();
}

$("auth").addEventListener("submit", (submit) => {
  submit.preventDefault();
  saveToken($("token").value);
  $("token").value = "";
  boot().catch(fail);
});
$("runtime").addEventListener("change", newSession);
$("older-client").addEventListener("change", newSession);
$("new-thread").addEventListener("click", newSession);
$("composer").addEventListener("submit", (submit) => {
  submit.preventDefault();
  send($("message").value);
  $("message").value = "";
});
$("compare-composer").addEventListener("submit", (submit) => {
  submit.preventDefault();
  const text = $("compare-message").value;
  const feature = page.runtimes[0]?.features.find((candidate) => candidate.sample_prompt === text)?.name;
  sendToEveryRuntime(text, feature);
});
onRequest(() => {
  $("copy-curl").disabled = false;
});
$("copy-curl").addEventListener("click", () => {
  const command = lastRequestAsCurl();
  $("curl-text").value = command;
  $("curl-dialog").showModal();
  $("curl-text").select();
  navigator.clipboard?.writeText(command).catch(() => {}); // plain http off localhost has no clipboard: the box is there
});
window.addEventListener("hashchange", showView);

function fail(error) {
  $("status").hidden = false;
  $("status").textContent = `The inspector could not start: ${error.message}`;
}

// For the browser tests and the curious: the sessions' recorded runs and events.
window.inspector = page;
showView();
boot().catch(fail);
