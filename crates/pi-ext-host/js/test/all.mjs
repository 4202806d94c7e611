// Every test file, for `node --test <this directory>` (see package.json).
import "./loading.test.mjs";
import "./events.test.mjs";
import "./commands-tools.test.mjs";
import "./ui.test.mjs";
import "./api.test.mjs";
import "./mcp.test.mjs";
import "./examples.test.mjs";
import "./modules.test.mjs";
import "./process.test.mjs";
import "./differential.test.mjs";
