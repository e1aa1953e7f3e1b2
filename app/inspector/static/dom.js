// The one DOM helper every panel uses.

/** `el("button", {type: "button", onclick}, "text", child)`: attributes, properties starting with
 * "on" as listeners, then children (strings become text nodes; null and false are skipped). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  node.append(...children.filter((child) => child !== null && child !== false));
  return node;
}

/** Runs `render` at most once per animation frame however often it is asked for. */
export function perFrame(render) {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      render();
    });
  };
}
