// Entry of the pi extension host: pi starts `node main.mjs` with the protocol pipes on fds 3/4/5.
// Only node: built-ins are imported statically, so the version check runs on any Node.
import path from "node:path";
import { fileURLToPath } from "node:url";

const major = Number(process.versions.node.split(".")[0]);
if (!(major >= 22)) {
	process.stderr.write(`pi extension host: Node.js >= 22 is required (found ${process.versions.node})\n`);
	process.exit(3);
}

const hostDir = path.dirname(fileURLToPath(import.meta.url));
const vendorDir = process.env.PI_EXT_HOST_VENDOR
	? path.resolve(process.env.PI_EXT_HOST_VENDOR)
	: path.resolve(hostDir, "..", "vendor");

try {
	const { ensureVendored } = await import("./lib/vendor.mjs");
	ensureVendored(hostDir, vendorDir);
} catch (error) {
	process.stderr.write(`pi extension host: cannot prepare jiti/typebox: ${error?.message ?? error}\n`);
	process.exit(3);
}
// `--prepare`: only unpack jiti and typebox (a test suite warms the cache once).
if (process.argv.includes("--prepare")) process.exit(0);

// Nothing an extension prints may reach pi's protocol; console.log and friends go to stderr.
const writeToStderr = process.stderr.write.bind(process.stderr);
process.stdout.write = (chunk, encoding, callback) => writeToStderr(chunk, encoding, callback);
console.log = console.error.bind(console);
console.info = console.error.bind(console);
console.debug = console.error.bind(console);

const { Channel, reopenInherited } = await import("./lib/channel.mjs");
const outFd = reopenInherited(3, "w");
const inFd = reopenInherited(4, "r");
const syncFd = reopenInherited(5, "r");
const channel = new Channel({ outFd, inFd, syncFd });

const { startHost } = await import("./lib/host.mjs");
startHost(channel);
