// Bundles client.js (the published @ag-ui/client, from this folder's lock) into one browser ES
// module for the inspector page. The output is committed: the Docker image has no Node.
//
//   node web/build.mjs [outfile]     (default: app/inspector/static/vendor/ag-ui-client.js)
//
// tests/test_inspector_bundle.py rebuilds into a temporary file and fails when the committed
// bundle differs, so a lock or client.js change without a rebuild cannot land.
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = fileURLToPath(new URL(".", import.meta.url));
const outfile = process.argv[2] ?? `${here}../app/inspector/static/vendor/ag-ui-client.js`;

await build({
  entryPoints: [`${here}client.js`],
  outfile,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2020",
  minify: true,
  legalComments: "eof", // the bundled packages' licence notices stay in the file
  logLevel: "warning",
});
