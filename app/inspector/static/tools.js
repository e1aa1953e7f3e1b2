// The page's own frontend tool: declared in every run's `tools`, run here when the agent calls it.

const PALETTE = ["#fef3c7", "#dcfce7", "#dbeafe", "#fce7f3", "#ede9fe"];
let turn = 0;

export const FRONTEND_TOOLS = [
  {
    name: "change_background",
    description: "Change the background colour of the inspector page.",
    parameters: {
      type: "object",
      properties: { color: { type: "string", description: "Any CSS colour; the page picks one when omitted." } },
    },
  },
];

/** Runs a tool call the agent left for the page; the answer for its tool message, or null when
 * the tool is not one of the page's. */
export function runFrontendTool(call) {
  if (call.function.name !== "change_background") return null;
  let args = {};
  try {
    args = JSON.parse(call.function.arguments || "{}");
  } catch {
    // a model may send arguments that do not parse; the page still picks a colour
  }
  const color = typeof args.color === "string" && CSS.supports("color", args.color)
    ? args.color
    : PALETTE[turn++ % PALETTE.length];
  document.body.style.setProperty("--page-bg", color);
  document.body.dataset.background = color;
  return `The page background is ${color} now.`;
}
