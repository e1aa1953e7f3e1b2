// What the page asks the server, and the one secret it may hold: the bearer token, kept in this
// tab's sessionStorage (never in the page the server sends, never in localStorage).

const TOKEN_KEY = "agui-inspector.token";

export function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { authorization: `Bearer ${token}` } : {};
}

export function saveToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export class Unauthorized extends Error {}

/** The capabilities document (`GET /` as JSON): every mounted runtime and its sample prompts. */
export async function capabilities() {
  const response = await fetch("./", { headers: { accept: "application/json", ...authHeaders() } });
  if (response.status === 401) throw new Unauthorized("the server wants a bearer token");
  if (!response.ok) throw new Error(`GET / answered HTTP ${response.status}`);
  return response.json();
}

let lastRequest = null;
const requestListeners = new Set();

/** Every run the page starts reports its RunAgentInput here, for "copy as curl". */
export function rememberRequest(route, input) {
  lastRequest = { route, input };
  for (const listener of requestListeners) listener(lastRequest);
}

export function onRequest(listener) {
  requestListeners.add(listener);
}

/** The last request as a shell command that runs it again: the same input under a new runId (the
 * server runs a runId once, and answers it again only to a reconnect). The token stays a
 * variable, never its value. */
export function lastRequestAsCurl() {
  if (!lastRequest) return "";
  const input = { ...lastRequest.input, runId: `run-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}` };
  const quote = (text) => `'${text.replaceAll("'", "'\\''")}'`;
  const url = new URL(lastRequest.route, location.href).href;
  const lines = [
    `curl -N ${quote(url)}`,
    `-H 'content-type: application/json'`,
    `-H 'accept: text/event-stream'`,
    ...(authHeaders().authorization ? [`-H "authorization: Bearer $AGUI_TOKEN"`] : []),
    `--data-raw ${quote(JSON.stringify(input))}`,
  ];
  return lines.join(" \\\n  ");
}
