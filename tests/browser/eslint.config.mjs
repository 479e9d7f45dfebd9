// ESLint for the page of `sam2rt serve` (web/app.js, a browser script) and this
// test (Node.js modules). scripts/browser-test.sh runs it from the repository root:
//   tests/browser/node_modules/.bin/eslint --config tests/browser/eslint.config.mjs
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    rules: {
      eqeqeq: "error",
      "no-var": "error",
      "prefer-const": "error",
      "no-unused-vars": ["error", { caughtErrors: "none" }],
    },
  },
  {
    files: ["web/**/*.js"],
    languageOptions: { sourceType: "script", globals: globals.browser },
  },
  {
    files: ["tests/browser/**/*.mjs"],
    // Functions passed to page.evaluate / waitForFunction run in the browser.
    languageOptions: { sourceType: "module", globals: { ...globals.node, ...globals.browser } },
  },
];
