// docs/matrix.md (served by the app as inspector/matrix.md), rendered for the compare view's
// links. Only the Markdown that generated page uses: headings, paragraphs, lists, one table,
// **bold**, `code` and links. Each table row gets an anchor per scenario its "What yes means"
// entry names, so matrix.html#subagent_approval lands on the row that explains that prompt.

import { el } from "./dom.js";

const response = await fetch("matrix.md");
const root = document.getElementById("matrix");
if (!response.ok) {
  root.replaceChildren(el("p", { class: "error" }, `The matrix is not available here (HTTP ${response.status}).`));
} else {
  render(await response.text());
  document.getElementById(decodeURIComponent(location.hash.slice(1)))?.scrollIntoView({ block: "center" });
}

function render(markdown) {
  const text = markdown.replace(/<!--[\s\S]*?-->/g, "");
  const scenarios = scenariosByRow(text);
  const blocks = text.split(/\n{2,}/).map((block) => block.trim()).filter(Boolean);
  root.replaceChildren(...blocks.map((block) => renderBlock(block, scenarios)));
}

/** "- **label** (`stem`, `stem`): ..." in "What yes means" -> {label: [stem, ...]}. */
function scenariosByRow(text) {
  const rows = {};
  for (const [, label, stems] of text.matchAll(/^- \*\*(.+?)\*\* \(([^)]*)\)/gm)) {
    rows[label] = [...stems.matchAll(/`([^`]+)`/g)].map((match) => match[1]);
  }
  return rows;
}

function renderBlock(block, scenarios) {
  const heading = block.match(/^(#{1,3}) (.*)$/);
  if (heading) return el(`h${heading[1].length}`, {}, ...inline(heading[2]));
  const lines = block.split("\n");
  if (lines.every((line) => line.startsWith("|"))) return table(lines, scenarios);
  if (lines.every((line) => /^(- |\d+\. )/.test(line))) {
    const ordered = /^\d+\. /.test(lines[0]);
    return el(ordered ? "ol" : "ul", {}, ...lines.map((line) => el("li", {}, ...inline(line.replace(/^(- |\d+\. )/, "")))));
  }
  return el("p", {}, ...inline(block));
}

function table(lines, scenarios) {
  const cells = (line) => line.slice(1, -1).split("|").map((cell) => cell.trim());
  const [head, , ...rows] = lines;
  return el(
    "table",
    {},
    el("thead", {}, el("tr", {}, ...cells(head).map((cell) => el("th", { scope: "col" }, ...inline(cell))))),
    el(
      "tbody",
      {},
      ...rows.map((row) => {
        const [label, ...rest] = cells(row);
        const anchors = (scenarios[label] ?? []).map((stem) => el("span", { id: stem }));
        return el("tr", {}, el("th", { scope: "row" }, ...anchors, ...inline(label)), ...rest.map((cell) => el("td", {}, ...inline(cell))));
      }),
    ),
  );
}

/** **bold**, `code` and [links](target); a link into the repository (a capture) stays text. */
function inline(text) {
  return text.split(/(\*\*[^*]+\*\*|`[^`]+`|\[[^\]]+\]\([^)]+\))/).filter(Boolean).map((part) => {
    if (part.startsWith("**")) return el("strong", {}, ...inline(part.slice(2, -2)));
    if (part.startsWith("`")) return el("code", {}, part.slice(1, -1));
    const link = part.match(/^\[([^\]]+)\]\(([^)]+)\)$/);
    if (link) {
      return /^https?:/.test(link[2])
        ? el("a", { href: link[2] }, link[1])
        : el("span", { class: "muted", title: `${link[2].replace(/^(\.\.\/)+/, "")} in the repository` }, link[1]);
    }
    return part;
  });
}
