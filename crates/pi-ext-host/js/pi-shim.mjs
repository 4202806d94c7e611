// Stands in for pi's entry script as process.argv[1]: extensions that run pi as
// `spawn(process.execPath, [process.argv[1], ...args])` (Pi's subagent example does) start the pi
// binary through this shim. The binary's path comes from the host (init `piPath`).
import { spawn } from "node:child_process";

const bin = process.env.PI_EXT_HOST_PI_PATH;
if (!bin) {
	process.stderr.write("pi extension host: the pi binary path is unknown (no piPath in init)\n");
	process.exit(127);
}
const env = { ...process.env };
delete env.PI_EXT_HOST;
delete env.PI_EXT_HOST_PI_PATH;
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit", env });
const forward = (signal) => child.kill(signal);
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, forward);
child.on("error", (error) => {
	process.stderr.write(`pi extension host: cannot start ${bin}: ${error.message}\n`);
	process.exit(127);
});
child.on("exit", (code, signal) => {
	if (signal) {
		// Die the same way, so the caller sees the signal.
		for (const s of ["SIGTERM", "SIGINT", "SIGHUP"]) process.off(s, forward);
		process.kill(process.pid, signal);
		return;
	}
	process.exit(code ?? 1);
});
