// What the inspector page takes from the published @ag-ui/client: its HttpAgent (transport, SSE
// parsing, verifyEvents, state snapshots and JSON Patch deltas, message history) and the helper
// that builds the protocol's `resume` array; plus rxjs's Observable (the client's own), for the
// page's one middleware. Nothing here re-implements the client.
export { HttpAgent, buildResumeArray } from "@ag-ui/client";
export { Observable } from "rxjs";
